#include "src/metrics/registry.h"

#include <bit>
#include <charconv>
#include <cmath>

#include "src/base/error_log.h"

namespace uring_http::metrics {
namespace {

constexpr std::string_view kReservedPrefix = "uring_http_";

bool NameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

// [a-zA-Z_:][a-zA-Z0-9_:]* (metric names), [a-zA-Z_][a-zA-Z0-9_]* (labels).
bool ValidName(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, colon)) return false;
  }
  return true;
}

double FromBits(uint64_t bits) { return std::bit_cast<double>(bits); }
uint64_t ToBits(double value) { return std::bit_cast<uint64_t>(value); }

// Adds to a double kept as bits (a gauge, a histogram shard's sum).
void AddDouble(std::atomic<uint64_t>& bits, double delta) {
  uint64_t old = bits.load(std::memory_order_relaxed);
  while (!bits.compare_exchange_weak(old, ToBits(FromBits(old) + delta),
                                     std::memory_order_relaxed)) {
  }
}

std::string LabelText(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!out.empty()) out += ",";
    out += name + "=\"" + EscapeLabelValue(value) + "\"";
  }
  return out;
}

// The names a family's samples are rendered under.
std::vector<std::string> SampleNames(std::string_view name, bool histogram) {
  std::vector<std::string> out{std::string(name)};
  if (histogram) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      out.push_back(std::string(name) + suffix);
    }
  }
  return out;
}

std::atomic<uint32_t> g_next_shard{0};

}  // namespace

namespace internal {
uint32_t AssignShard() {
  return g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards;
}
}  // namespace internal

// ---------------------------------------------------------------- formatting

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, r.ptr);
}

std::vector<double> DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

// ---------------------------------------------------------------- metrics

uint64_t Counter::Value() const {
  uint64_t sum = 0;
  for (const Cell& c : cells_) sum += c.value.load(std::memory_order_relaxed);
  return sum;
}

void Gauge::Set(double value) { bits_.store(ToBits(value), std::memory_order_relaxed); }
void Gauge::Add(double delta) { AddDouble(bits_, delta); }
double Gauge::Value() const { return FromBits(bits_.load(std::memory_order_relaxed)); }

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  // bounds + 1 counts and the sum, rounded up to whole cache lines.
  constexpr size_t kPerLine = 64 / sizeof(std::atomic<uint64_t>);
  stride_ = (bounds_.size() + 2 + kPerLine - 1) / kPerLine * kPerLine;
  cells_ = std::make_unique<std::atomic<uint64_t>[]>(stride_ * internal::kShards);
  for (size_t i = 0; i < stride_ * internal::kShards; ++i) cells_[i].store(0);
}

Histogram::~Histogram() = default;

void Histogram::Observe(double value) {
  // Buckets are few (a dozen): a scan is as fast as a search. NaN is
  // above every bound (no comparison holds): the +Inf bucket, as
  // Prometheus' own clients count it.
  size_t b = 0;
  while (b < bounds_.size() && !(value <= bounds_[b])) ++b;
  std::atomic<uint64_t>* s = shard(internal::Shard());
  s[b].fetch_add(1, std::memory_order_relaxed);
  AddDouble(s[bounds_.size() + 1], value);
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot snap;
  snap.counts.assign(bounds_.size() + 1, 0);
  for (size_t i = 0; i < internal::kShards; ++i) {
    const std::atomic<uint64_t>* s = shard(i);
    for (size_t b = 0; b <= bounds_.size(); ++b) {
      snap.counts[b] += s[b].load(std::memory_order_relaxed);
    }
    snap.sum += FromBits(s[bounds_.size() + 1].load(std::memory_order_relaxed));
  }
  for (uint64_t c : snap.counts) snap.count += c;
  return snap;
}

// ---------------------------------------------------------------- registry

struct Registry::Series {
  Labels labels;
  std::string label_text;  // rendered once: name="value",...
  std::unique_ptr<metrics::Counter> counter;
  std::unique_ptr<metrics::Gauge> gauge;
  std::unique_ptr<metrics::Histogram> histogram;
};

struct Registry::Family {
  Type type;
  std::string name;
  std::string help;
  std::vector<std::string> label_names;
  std::vector<double> buckets;  // histograms
  std::vector<std::unique_ptr<Series>> series;
};

Registry::Registry() = default;
Registry::~Registry() = default;

void Registry::Refuse(std::string message) {
  base::LogError(message);
  if (status_.ok()) status_ = absl::InvalidArgumentError(std::move(message));
}

Registry::Series* Registry::Find(Type type, std::string_view name, std::string_view help,
                                 const Labels& labels, const std::vector<double>* buckets) {
  const auto refuse = [&](std::string_view why) {
    Refuse("metric \"" + std::string(name) + "\": " + std::string(why));
    return nullptr;
  };
  if (!ValidName(name, /*colon=*/true)) {
    return refuse("a metric name must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  if (name.substr(0, kReservedPrefix.size()) == kReservedPrefix) {
    return refuse("names starting with uring_http_ are the server's own");
  }
  std::vector<std::string> label_names;
  for (const auto& [label, value] : labels) {
    if (!ValidName(label, /*colon=*/false) || label.substr(0, 2) == "__") {
      return refuse("label name \"" + label +
                    "\" must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __");
    }
    if (type == Type::kHistogram && label == "le") {
      return refuse("a histogram's buckets are its le label: the name is taken");
    }
    for (const std::string& seen : label_names) {
      if (seen == label) return refuse("label \"" + label + "\" given twice");
    }
    label_names.push_back(label);
  }
  if (buckets != nullptr) {
    if (buckets->empty()) return refuse("a histogram needs at least one bucket");
    for (size_t i = 0; i < buckets->size(); ++i) {
      if (!std::isfinite((*buckets)[i]) || (i > 0 && !((*buckets)[i - 1] < (*buckets)[i]))) {
        return refuse("buckets must be finite and strictly increasing (+Inf is implied)");
      }
    }
  }

  Family* family = nullptr;
  const std::vector<std::string> names = SampleNames(name, type == Type::kHistogram);
  for (const auto& f : families_) {
    if (f->name == name) {
      family = f.get();
      break;
    }
    // Another family rendering a sample under one of this one's names (a
    // histogram "x" and a counter "x_count") would make /metrics
    // unreadable.
    for (const std::string& a : SampleNames(f->name, f->type == Type::kHistogram)) {
      for (const std::string& b : names) {
        if (a == b) {
          return refuse("its samples would clash with those of \"" + f->name + "\"");
        }
      }
    }
  }
  if (family != nullptr) {
    if (family->type != type) return refuse("registered before as another type");
    if (family->help != help) return refuse("registered before with another help text");
    if (family->label_names != label_names) {
      return refuse("registered before with other label names");
    }
    if (buckets != nullptr && family->buckets != *buckets) {
      return refuse("registered before with other buckets");
    }
    for (const auto& s : family->series) {
      if (s->labels == labels) return s.get();
    }
  } else {
    auto f = std::make_unique<Family>();
    f->type = type;
    f->name = std::string(name);
    f->help = std::string(help);
    f->label_names = std::move(label_names);
    if (buckets != nullptr) f->buckets = *buckets;
    family = f.get();
    families_.push_back(std::move(f));
  }
  auto s = std::make_unique<Series>();
  s->labels = labels;
  s->label_text = LabelText(labels);
  switch (type) {
    case Type::kCounter:
      s->counter.reset(new metrics::Counter());
      break;
    case Type::kGauge:
      s->gauge.reset(new metrics::Gauge());
      break;
    case Type::kHistogram:
      s->histogram.reset(new metrics::Histogram(*buckets));
      break;
  }
  family->series.push_back(std::move(s));
  return family->series.back().get();
}

metrics::Counter& Registry::Counter(std::string_view name, std::string_view help,
                                    const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Series* s = Find(Type::kCounter, name, help, labels, nullptr)) return *s->counter;
  refused_.push_back(std::make_unique<Series>());
  refused_.back()->counter.reset(new metrics::Counter());
  return *refused_.back()->counter;
}

metrics::Gauge& Registry::Gauge(std::string_view name, std::string_view help,
                                const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Series* s = Find(Type::kGauge, name, help, labels, nullptr)) return *s->gauge;
  refused_.push_back(std::make_unique<Series>());
  refused_.back()->gauge.reset(new metrics::Gauge());
  return *refused_.back()->gauge;
}

metrics::Histogram& Registry::Histogram(std::string_view name, std::string_view help,
                                        std::vector<double> buckets, const Labels& labels) {
  if (buckets.empty()) buckets = DefaultBuckets();
  std::lock_guard<std::mutex> lock(mu_);
  if (Series* s = Find(Type::kHistogram, name, help, labels, &buckets)) return *s->histogram;
  refused_.push_back(std::make_unique<Series>());
  refused_.back()->histogram.reset(new metrics::Histogram(DefaultBuckets()));
  return *refused_.back()->histogram;
}

absl::Status Registry::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Registry::Render(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    const char* type = f->type == Type::kCounter ? "counter"
                       : f->type == Type::kGauge ? "gauge"
                                                 : "histogram";
    *out += "# HELP " + f->name + " " + EscapeHelp(f->help) + "\n# TYPE " + f->name + " " +
            type + "\n";
    for (const auto& s : f->series) {
      const std::string braces = s->label_text.empty() ? "" : "{" + s->label_text + "}";
      switch (f->type) {
        case Type::kCounter:
          *out += f->name + braces + " " + std::to_string(s->counter->Value()) + "\n";
          break;
        case Type::kGauge:
          *out += f->name + braces + " " + FormatValue(s->gauge->Value()) + "\n";
          break;
        case Type::kHistogram: {
          const metrics::Histogram::Snapshot snap = s->histogram->Collect();
          const std::string open = f->name + "_bucket{" + s->label_text +
                                   (s->label_text.empty() ? "" : ",") + "le=\"";
          uint64_t cumulative = 0;
          for (size_t b = 0; b < snap.counts.size(); ++b) {
            cumulative += snap.counts[b];
            const std::string le =
                b < f->buckets.size() ? FormatValue(f->buckets[b]) : std::string("+Inf");
            *out += open + le + "\"} " + std::to_string(cumulative) + "\n";
          }
          *out += f->name + "_sum" + braces + " " + FormatValue(snap.sum) + "\n";
          *out += f->name + "_count" + braces + " " + std::to_string(snap.count) + "\n";
          break;
        }
      }
    }
  }
}

}  // namespace uring_http::metrics
