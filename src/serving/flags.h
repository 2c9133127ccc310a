// Flags: a program's command-line flags, declared next to the variables they
// set. The server's own flags are declared this way (options.cc), and a
// program embedding the server declares its flags on a Flags of its own and
// hands it to ParseOptions (options.h), which parses both from the same argv
// and lists both in --help:
//
//   serving::Flags flags("inventory: the stock API");
//   std::string db = "stock.db";
//   flags.Add("db", &db, "Path of the database").Value("FILE");
//   std::chrono::milliseconds query_timeout{2000};
//   flags.Add("query-timeout", &query_timeout, "Longest a query may run");
//   serving::Options options = serving::ParseOptions(argc, argv, &flags);
//
// Values: --name=VALUE or --name VALUE (a switch takes none); a one-letter
// alias (Short) also as -x VALUE, -xVALUE, and switches grouped (-vd).
// Sizes are bytes, or take a unit (ParseSize); durations take ms, s, m or h
// (ParseDuration). A value a flag refuses is reported as "invalid value 'V'
// for --name: <what the flag expects>".
//
// --help shows each flag's default: the variable's value when it was
// declared, so a default lives in the variable's initializer only.
//
// Thread-safety: none; declare and parse on one thread, before serving.
#ifndef URING_HTTP_SRC_SERVING_FLAGS_H_
#define URING_HTTP_SRC_SERVING_FLAGS_H_

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace uring_http::serving {

// One declared flag. The setters below return it so that a declaration reads
// as one statement: flags.Add("slow-duration", &ms, "...").Short('D').
class Flag {
 public:
  // A one-letter alias: -D 5, -D5; a switch's may be grouped (-vd).
  Flag& Short(char letter);
  // The word for the value in --help: --db=FILE (default: by its kind).
  Flag& Value(std::string word);
  // A second long name (--worker-threads for --workers).
  Flag& Alias(std::string name);
  // The value may also be left out (--name alone runs `without_value`); it
  // is then given only as --name=VALUE.
  Flag& OptionalValue(std::function<void()> without_value);
  // What --help shows as the default, computed when --help is printed,
  // instead of the value (for a value that stands for a rule, such as -1
  // for "one per accept thread").
  Flag& ShowDefault(std::function<std::string()> show);

  const std::string& name() const { return name_; }

 private:
  friend class Flags;
  friend struct FlagParser;
  enum class Arity : uint8_t { kSwitch, kValue, kOptionalValue };

  std::string name_;
  std::vector<std::string> aliases_;
  char short_ = 0;
  Arity arity_ = Arity::kValue;
  std::string value_word_;
  std::string help_;
  std::string section_;
  // kValue and kOptionalValue: takes the text (the reason it is refused
  // begins "expected ..."). kSwitch and kOptionalValue without a value:
  // set_switch.
  std::function<absl::Status(std::string_view)> set_value_;
  std::function<void()> set_switch_;
  std::function<std::string()> show_;
};

class Flags {
 public:
  // `description`: printed at the top of --help (what the program is).
  explicit Flags(std::string description = "");
  Flags(Flags&&) = default;
  Flags& operator=(Flags&&) = default;

  // The heading in --help of the flags declared after it.
  void Section(std::string title);

  // --name=TEXT.
  Flag& Add(std::string name, std::string* value, std::string help);
  // A switch: --name sets *value to true; it takes no value.
  Flag& Add(std::string name, bool* value, std::string help);
  // --name=N: a decimal integer in [min, max].
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Flag& Add(std::string name, T* value, std::string help,
            T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
    return AddInteger(std::move(name), std::move(help), static_cast<int64_t>(min),
                      static_cast<uint64_t>(max), min < 0,
                      [value](int64_t v) { *value = static_cast<T>(v); },
                      [value] { return std::to_string(*value); });
  }
  // --name=DURATION: 500ms, 30s, 2m, 1h, or a plain number of seconds; up to
  // a day.
  Flag& Add(std::string name, std::chrono::milliseconds* value, std::string help);
  // --name=SIZE: bytes, or with a unit (ParseSize), in [min, max].
  template <std::unsigned_integral T>
  Flag& AddSize(std::string name, T* value, std::string help, uint64_t min = 0,
                uint64_t max = std::numeric_limits<T>::max()) {
    return AddSizeImpl(std::move(name), std::move(help), min, max,
                       [value](uint64_t v) { *value = static_cast<T>(v); },
                       [value] { return static_cast<uint64_t>(*value); });
  }
  // --name=WORD, one of `choices`.
  Flag& AddChoice(std::string name, std::string* value, std::vector<std::string> choices,
                  std::string help);
  // Any other kind of value: `set` takes the text, or refuses it with a
  // reason that begins "expected ..."; `show` is the current value as
  // --help shows it. `value_word` names the value in --help.
  Flag& AddParsed(std::string name, std::string value_word, std::string help,
                  std::function<absl::Status(std::string_view)> set,
                  std::function<std::string()> show);
  // A switch that runs `set` (--name, no value).
  Flag& AddSwitch(std::string name, std::string help, std::function<void()> set,
                  std::function<std::string()> show);
  // A check run once every flag is taken, for rules across flags; its
  // error is reported as it is.
  void AddCheck(std::function<absl::Status()> check);

  // Parses argv[1..] against these flags and, before them, `first`'s
  // (either may be empty; a name both declare is an error). -h, --help and
  // -? anywhere set *help and nothing else is taken.
  absl::Status Parse(int argc, char** argv, bool* help, const Flags* first = nullptr);
  // The --help text: the description, a usage line, `first`'s flags and
  // then these, by section, each with its default.
  std::string Usage(const char* program, const Flags* first = nullptr) const;

  const std::string& description() const { return description_; }
  const std::vector<std::unique_ptr<Flag>>& flags() const { return flags_; }

 private:
  Flag& AddInteger(std::string name, std::string help, int64_t min, uint64_t max,
                   bool signed_range, std::function<void(int64_t)> set,
                   std::function<std::string()> show);
  Flag& AddSizeImpl(std::string name, std::string help, uint64_t min, uint64_t max,
                    std::function<void(uint64_t)> set, std::function<uint64_t()> get);
  Flag& New(std::string name, std::string help);

  std::string description_;
  std::string section_;
  std::vector<std::unique_ptr<Flag>> flags_;
  std::vector<std::function<absl::Status()>> checks_;
};

// A size: a whole number of bytes, with an optional unit right after it:
// B (bytes); k, K, M, G, T (and m, g, t) and KiB, MiB, GiB, TiB: powers of
// 1024, as nginx's k/m/g; kB, KB, MB, GB, TB: powers of 1000, as GNU dd's.
// Refused: no digits, another suffix, a fraction, a sign, past 2^64 - 1.
absl::StatusOr<uint64_t> ParseSize(std::string_view text);
// The shortest exact form: 0, 100, 64KiB, 1MiB, 1GiB (what --help shows).
std::string FormatSize(uint64_t bytes);
// A duration in milliseconds: a whole number with ms, s, m or h, or a plain
// number of seconds; at most `max_ms`.
absl::StatusOr<uint64_t> ParseDuration(std::string_view text, uint64_t max_ms);
// The shortest exact form: 0, 500ms, 30s, 2m, 1h.
std::string FormatDuration(uint64_t ms);

}  // namespace uring_http::serving

#endif  // URING_HTTP_SRC_SERVING_FLAGS_H_
