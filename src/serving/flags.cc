#include "src/serving/flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace uring_http::serving {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;

// This abseil's string_view is its own type, not std::string_view.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

struct Unit {
  std::string_view suffix;
  uint64_t multiplier;
};

// Longest first where one suffix ends another ("KiB" before "B").
constexpr Unit kSizeUnits[] = {
    {"KiB", kKiB},         {"MiB", kKiB << 10},   {"GiB", kKiB << 20},
    {"TiB", kKiB << 30},   {"kB", 1000},          {"KB", 1000},
    {"MB", 1'000'000},     {"GB", 1'000'000'000}, {"TB", 1'000'000'000'000},
    {"k", kKiB},           {"K", kKiB},           {"m", kKiB << 10},
    {"M", kKiB << 10},     {"g", kKiB << 20},     {"G", kKiB << 20},
    {"t", kKiB << 30},     {"T", kKiB << 30},     {"B", 1},
};

constexpr std::string_view kSizeRule =
    "a whole number of bytes, or with a unit: 64k, 64KiB, 1M, 1GiB (k M G T and "
    "KiB MiB GiB TiB are powers of 1024; kB MB GB TB powers of 1000)";

// Leading decimal digits of `text` (at least one), refusing what overflows.
// Returns how many characters were digits (0: none, or overflow).
size_t Digits(std::string_view text, uint64_t* value) {
  size_t i = 0;
  uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return 0;
    v = v * 10 + digit;
  }
  *value = v;
  return i;
}

std::string Wrap(std::string_view text, size_t indent, size_t width) {
  std::string out;
  size_t column = indent;
  bool first = true;
  while (!text.empty()) {
    const size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (word.empty()) continue;
    if (!first && column + 1 + word.size() > width) {
      out += "\n";
      out.append(indent, ' ');
      column = indent;
    } else if (!first) {
      out += " ";
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  return out;
}

}  // namespace

absl::StatusOr<uint64_t> ParseSize(std::string_view text) {
  uint64_t value = 0;
  const size_t digits = Digits(text, &value);
  if (digits == 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected a size: ", Sv(kSizeRule)));
  }
  const std::string_view suffix = text.substr(digits);
  uint64_t multiplier = suffix.empty() ? 1 : 0;
  for (const Unit& unit : kSizeUnits) {
    if (suffix == unit.suffix) multiplier = unit.multiplier;
  }
  if (multiplier == 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected a size: ", Sv(kSizeRule)));
  }
  if (value > UINT64_MAX / multiplier) {
    return absl::InvalidArgumentError("expected a size below 16EiB");
  }
  return value * multiplier;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr Unit kBinary[] = {
      {"TiB", kKiB << 30}, {"GiB", kKiB << 20}, {"MiB", kKiB << 10}, {"KiB", kKiB}};
  if (bytes != 0) {
    for (const Unit& unit : kBinary) {
      if (bytes % unit.multiplier == 0) return absl::StrCat(bytes / unit.multiplier, Sv(unit.suffix));
    }
  }
  return std::to_string(bytes);
}

absl::StatusOr<uint64_t> ParseDuration(std::string_view text, uint64_t max_ms) {
  uint64_t value = 0;
  const size_t digits = Digits(text, &value);
  const std::string_view suffix = text.substr(digits);
  uint64_t scale = 0;
  if (suffix == "ms") {
    scale = 1;
  } else if (suffix == "s" || suffix.empty()) {
    scale = 1000;
  } else if (suffix == "m") {
    scale = 60'000;
  } else if (suffix == "h") {
    scale = 3'600'000;
  }
  if (digits == 0 || scale == 0 || value > max_ms / scale) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a duration such as 30, 30s, 500ms, 2m or 1h (at most ",
                     FormatDuration(max_ms), ")"));
  }
  return value * scale;
}

std::string FormatDuration(uint64_t ms) {
  if (ms == 0) return "0";
  if (ms % 3'600'000 == 0) return absl::StrCat(ms / 3'600'000, "h");
  if (ms % 60'000 == 0) return absl::StrCat(ms / 60'000, "m");
  if (ms % 1000 == 0) return absl::StrCat(ms / 1000, "s");
  return absl::StrCat(ms, "ms");
}

Flag& Flag::Short(char letter) {
  short_ = letter;
  return *this;
}

Flag& Flag::Value(std::string word) {
  value_word_ = std::move(word);
  return *this;
}

Flag& Flag::Alias(std::string name) {
  aliases_.push_back(std::move(name));
  return *this;
}

Flag& Flag::OptionalValue(std::function<void()> without_value) {
  arity_ = Arity::kOptionalValue;
  set_switch_ = std::move(without_value);
  return *this;
}

Flag& Flag::ShowDefault(std::function<std::string()> show) {
  show_ = std::move(show);
  return *this;
}

Flags::Flags(std::string description) : description_(std::move(description)) {}

void Flags::Section(std::string title) { section_ = std::move(title); }

Flag& Flags::New(std::string name, std::string help) {
  auto flag = std::make_unique<Flag>();
  flag->name_ = std::move(name);
  flag->help_ = std::move(help);
  flag->section_ = section_;
  flags_.push_back(std::move(flag));
  return *flags_.back();
}

Flag& Flags::Add(std::string name, std::string* value, std::string help) {
  return AddParsed(
      std::move(name), "TEXT", std::move(help),
      [value](std::string_view text) {
        *value = std::string(text);
        return absl::OkStatus();
      },
      [value] { return value->empty() ? std::string("none") : *value; });
}

Flag& Flags::Add(std::string name, bool* value, std::string help) {
  return AddSwitch(
      std::move(name), std::move(help), [value] { *value = true; },
      [value] { return std::string(*value ? "on" : "off"); });
}

Flag& Flags::Add(std::string name, std::chrono::milliseconds* value, std::string help) {
  return AddParsed(
      std::move(name), "DURATION", std::move(help),
      [value](std::string_view text) -> absl::Status {
        absl::StatusOr<uint64_t> ms = ParseDuration(text, 86'400'000);
        if (!ms.ok()) return ms.status();
        *value = std::chrono::milliseconds(*ms);
        return absl::OkStatus();
      },
      [value] { return FormatDuration(static_cast<uint64_t>(std::max<int64_t>(value->count(), 0))); });
}

Flag& Flags::AddChoice(std::string name, std::string* value, std::vector<std::string> choices,
                       std::string help) {
  const std::string word = absl::StrJoin(choices, "|");
  return AddParsed(
      std::move(name), word, std::move(help),
      [value, choices](std::string_view text) -> absl::Status {
        if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
          std::string list;
          for (size_t i = 0; i < choices.size(); ++i) {
            list += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
            list += choices[i];
          }
          return absl::InvalidArgumentError(absl::StrCat("expected ", list));
        }
        *value = std::string(text);
        return absl::OkStatus();
      },
      [value] { return *value; });
}

Flag& Flags::AddParsed(std::string name, std::string value_word, std::string help,
                       std::function<absl::Status(std::string_view)> set,
                       std::function<std::string()> show) {
  Flag& flag = New(std::move(name), std::move(help));
  flag.arity_ = Flag::Arity::kValue;
  flag.value_word_ = std::move(value_word);
  flag.set_value_ = std::move(set);
  flag.show_ = std::move(show);
  return flag;
}

Flag& Flags::AddSwitch(std::string name, std::string help, std::function<void()> set,
                       std::function<std::string()> show) {
  Flag& flag = New(std::move(name), std::move(help));
  flag.arity_ = Flag::Arity::kSwitch;
  flag.set_switch_ = std::move(set);
  flag.show_ = std::move(show);
  return flag;
}

Flag& Flags::AddInteger(std::string name, std::string help, int64_t min, uint64_t max,
                        bool signed_range, std::function<void(int64_t)> set,
                        std::function<std::string()> show) {
  const std::string range = absl::StrCat("[", min, ", ", max, "]");
  return AddParsed(
      std::move(name), "N", std::move(help),
      [=](std::string_view text) -> absl::Status {
        const bool negative = signed_range && !text.empty() && text[0] == '-';
        const std::string_view digits = negative ? text.substr(1) : text;
        uint64_t magnitude = 0;
        const size_t n = Digits(digits, &magnitude);
        bool ok = n != 0 && n == digits.size();
        int64_t value = 0;
        if (ok && negative) {
          // -magnitude >= min (< 0), written so that neither side overflows.
          ok = magnitude <= static_cast<uint64_t>(-(min + 1)) + 1;
          value = magnitude == 0 ? 0 : -static_cast<int64_t>(magnitude - 1) - 1;
        } else if (ok) {
          ok = magnitude <= max && (min <= 0 || magnitude >= static_cast<uint64_t>(min));
          value = static_cast<int64_t>(magnitude);  // the setter casts back to its type
        }
        if (!ok) return absl::InvalidArgumentError(absl::StrCat("expected an integer in ", range));
        set(value);
        return absl::OkStatus();
      },
      std::move(show));
}

Flag& Flags::AddSizeImpl(std::string name, std::string help, uint64_t min, uint64_t max,
                         std::function<void(uint64_t)> set, std::function<uint64_t()> get) {
  return AddParsed(
      std::move(name), "SIZE", std::move(help),
      [=](std::string_view text) -> absl::Status {
        absl::StatusOr<uint64_t> bytes = ParseSize(text);
        if (!bytes.ok()) return bytes.status();
        if (*bytes < min || *bytes > max) {
          return absl::InvalidArgumentError(absl::StrCat("expected a size in [", min, ", ", max,
                                                         "] bytes (", FormatSize(min), " to ",
                                                         FormatSize(max), ")"));
        }
        set(*bytes);
        return absl::OkStatus();
      },
      [get] { return FormatSize(get()); });
}

void Flags::AddCheck(std::function<absl::Status()> check) { checks_.push_back(std::move(check)); }

// The parser: one pass over argv, getopt_long's syntax without its global
// state (and without abbreviations of long names, which a later flag can
// make ambiguous).
struct FlagParser {
  std::vector<const Flag*> flags;

  absl::Status Collect(const Flags* set) {
    if (set == nullptr) return absl::OkStatus();
    for (const std::unique_ptr<Flag>& f : set->flags()) {
      for (const Flag* other : flags) {
        std::string clash;
        if (f->short_ != 0 && f->short_ == other->short_) clash = std::string(1, f->short_);
        if (Long(f->name_, other)) clash = "--" + f->name_;
        for (const std::string& alias : f->aliases_) {
          if (Long(alias, other)) clash = "--" + alias;
        }
        if (!clash.empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "flag ", clash.size() == 1 ? "-" : "", clash, " of --", f->name_,
              " is declared twice (also by --", other->name_, ")"));
        }
      }
      flags.push_back(f.get());
    }
    return absl::OkStatus();
  }

  static bool Long(std::string_view name, const Flag* f) {
    if (f->name_ == name) return true;
    return std::find(f->aliases_.begin(), f->aliases_.end(), name) != f->aliases_.end();
  }
  const Flag* Long(std::string_view name) const {
    for (const Flag* f : flags) {
      if (Long(name, f)) return f;
    }
    return nullptr;
  }
  const Flag* Short(char c) const {
    for (const Flag* f : flags) {
      if (f->short_ == c) return f;
    }
    return nullptr;
  }

  static absl::Status Set(const Flag& f, std::string_view value) {
    absl::Status s = f.set_value_(value);
    if (s.ok()) return s;
    return absl::InvalidArgumentError(
        absl::StrCat("invalid value '", Sv(value), "' for --", f.name_, ": ", s.message()));
  }

  absl::Status Parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") {
        if (i + 1 < argc) {
          return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", argv[i + 1], "'"));
        }
        break;
      }
      if (arg.size() < 2 || arg[0] != '-') {
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", Sv(arg), "'"));
      }
      if (arg[1] == '-') {
        const size_t eq = arg.find('=');
        const std::string_view name = arg.substr(2, eq == std::string_view::npos ? eq : eq - 2);
        const Flag* f = Long(name);
        if (f == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("unknown option '--", Sv(name), "'"));
        }
        if (eq != std::string_view::npos) {
          if (f->arity_ == Flag::Arity::kSwitch) {
            return absl::InvalidArgumentError(
                absl::StrCat("option '--", Sv(name), "' takes no value"));
          }
          if (absl::Status s = Set(*f, arg.substr(eq + 1)); !s.ok()) return s;
        } else if (f->arity_ != Flag::Arity::kValue) {
          f->set_switch_();
        } else if (i + 1 < argc) {
          if (absl::Status s = Set(*f, argv[++i]); !s.ok()) return s;
        } else {
          return absl::InvalidArgumentError(absl::StrCat("option '--", Sv(name), "' needs a value"));
        }
        continue;
      }
      // One or more short flags: switches, then at most one that takes the
      // rest of the word or the next one as its value.
      for (size_t j = 1; j < arg.size(); ++j) {
        const Flag* f = Short(arg[j]);
        if (f == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat("unknown option '-", std::string(1, arg[j]), "'"));
        }
        if (f->arity_ != Flag::Arity::kValue) {
          f->set_switch_();
          continue;
        }
        if (j + 1 < arg.size()) {
          if (absl::Status s = Set(*f, arg.substr(j + 1)); !s.ok()) return s;
        } else if (i + 1 < argc) {
          if (absl::Status s = Set(*f, argv[++i]); !s.ok()) return s;
        } else {
          return absl::InvalidArgumentError(
              absl::StrCat("option '-", std::string(1, arg[j]), "' needs a value"));
        }
        break;
      }
    }
    return absl::OkStatus();
  }
};

absl::Status Flags::Parse(int argc, char** argv, bool* help, const Flags* first) {
  FlagParser parser;
  if (absl::Status s = parser.Collect(first); !s.ok()) return s;
  if (absl::Status s = parser.Collect(this); !s.ok()) return s;
  // Help wins over everything else on the line, a mistake included.
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-h" || arg == "-?") *help = true;
  }
  if (*help) return absl::OkStatus();
  if (absl::Status s = parser.Parse(argc, argv); !s.ok()) return s;
  for (const Flags* set : {first, static_cast<const Flags*>(this)}) {
    if (set == nullptr) continue;
    for (const auto& check : set->checks_) {
      if (absl::Status s = check(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

std::string Flags::Usage(const char* program, const Flags* first) const {
  constexpr size_t kColumn = 30;
  constexpr size_t kWidth = 79;
  std::string out;
  const std::string& description =
      first != nullptr && !first->description().empty() ? first->description() : description_;
  if (!description.empty()) absl::StrAppend(&out, Wrap(description, 0, kWidth), "\n");
  absl::StrAppend(&out, "Usage: ", program, " [flags]\n");
  for (const Flags* set : {first, this}) {
    if (set == nullptr) continue;
    const std::string* section = nullptr;
    for (const std::unique_ptr<Flag>& f : set->flags()) {
      if (section == nullptr || *section != f->section_) {
        section = &f->section_;
        absl::StrAppend(&out, "\n", section->empty() ? "Flags" : *section, ":\n");
      }
      std::string head = f->short_ != 0 ? absl::StrCat("  -", std::string(1, f->short_), ", --")
                                         : std::string("      --");
      const std::string value = f->arity_ == Flag::Arity::kValue ? absl::StrCat("=", f->value_word_)
                                : f->arity_ == Flag::Arity::kOptionalValue
                                    ? absl::StrCat("[=", f->value_word_, "]")
                                    : "";
      absl::StrAppend(&head, f->name_, value);
      std::string text = f->help_;
      for (const std::string& alias : f->aliases_) {
        absl::StrAppend(&text, " (also --", alias, value, ")");
      }
      const std::string shown = f->show_ ? f->show_() : "";
      if (!shown.empty()) absl::StrAppend(&text, " (default: ", shown, ")");
      out += head;
      if (head.size() + 1 > kColumn) {
        out += "\n";
        out.append(kColumn, ' ');
      } else {
        out.append(kColumn - head.size(), ' ');
      }
      absl::StrAppend(&out, Wrap(text, kColumn, kWidth), "\n");
    }
  }
  return out;
}

}  // namespace uring_http::serving
