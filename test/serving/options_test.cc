// Tests for TryParseOptions (ParseOptions without the exits): defaults, every
// flag in its long (--name=value and --name value) and short (-p 1, -p1)
// forms, the --worker-threads alias, durations and sizes with units, help,
// errors that name the offending option (a program's own flags:
// program_flags_test). Each test passes its own mutable copy of argv, as
// main() would.
#include "src/serving/options.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test/serving/parse_args.h"

namespace uring_http::serving {
namespace {

using options_testing::Args;
using options_testing::ExpectError;
using options_testing::Parse;

int Cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

TEST(OptionsTest, Defaults) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  const ServerConfig& c = options->config;
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.address, "");  // every address: dual-stack [::] where there is IPv6
  EXPECT_TRUE(c.listen.empty());
  EXPECT_EQ(c.accept_threads, Cpus());
  EXPECT_EQ(c.accept_capacity, 100000u);
  EXPECT_EQ(c.workers, Cpus());
  EXPECT_FALSE(c.verbose);
  EXPECT_FALSE(options->help);
  EXPECT_FALSE(c.sqpoll);
  EXPECT_FALSE(c.pin_cpus);
  EXPECT_EQ(c.send_zc_min_bytes, 131072u);  // zero-copy send from 128 KiB
  EXPECT_EQ(c.header_timeout_ms, 10'000u);
  EXPECT_EQ(c.body_timeout_ms, 60'000u);
  EXPECT_EQ(c.body_min_rate, 1024u);
  EXPECT_EQ(c.body_rate_window_ms, 10'000u);
  EXPECT_EQ(c.idle_timeout_ms, 60'000u);
  EXPECT_EQ(c.send_timeout_ms, 30'000u);
  EXPECT_EQ(c.shutdown_timeout_ms, 30'000u);
  EXPECT_EQ(c.limits.max_request_line, http::ParseLimits().max_request_line);
  EXPECT_EQ(c.limits.max_body_bytes, http::ParseLimits().max_body_bytes);
  EXPECT_EQ(c.metrics_path, "/metrics");
  EXPECT_EQ(c.health_path, "/healthz");
}

TEST(OptionsTest, ShortFlags) {
  absl::StatusOr<Options> options = Parse({"-p", "1", "-A", "2", "-C", "3", "-w", "4", "-v"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.port, 1);
  EXPECT_EQ(options->config.accept_threads, 2);
  EXPECT_EQ(options->config.accept_capacity, 3u);
  EXPECT_EQ(options->config.workers, 4);
  EXPECT_TRUE(options->config.verbose);
  EXPECT_FALSE(options->help);
}

TEST(OptionsTest, GluedShortFlags) {
  absl::StatusOr<Options> options = Parse({"-p1", "-A2", "-C3", "-w4", "-v"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.port, 1);
  EXPECT_EQ(options->config.accept_threads, 2);
  EXPECT_EQ(options->config.accept_capacity, 3u);
  EXPECT_EQ(options->config.workers, 4);
  EXPECT_TRUE(options->config.verbose);
  // A switch groups with a flag that takes the rest of the word.
  options = Parse({"-vp7"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->config.verbose);
  EXPECT_EQ(options->config.port, 7);
}

TEST(OptionsTest, LongFlagsWithEquals) {
  absl::StatusOr<Options> options =
      Parse({"--port=8080", "--accept-threads=3", "--accept-capacity=500", "--workers=7",
             "--verbose", "--address=127.0.0.1",
             "--max-request-line=1000", "--max-header-bytes=2000", "--max-headers=20",
             "--max-body-bytes=0", "--sqpoll", "--pin-cpus"});
  ASSERT_TRUE(options.ok()) << options.status();
  const ServerConfig& c = options->config;
  EXPECT_EQ(c.port, 8080);
  EXPECT_EQ(c.accept_threads, 3);
  EXPECT_EQ(c.accept_capacity, 500u);
  EXPECT_EQ(c.workers, 7);
  EXPECT_TRUE(c.verbose);
  EXPECT_EQ(c.address, "127.0.0.1");
  EXPECT_EQ(c.limits.max_request_line, 1000u);
  EXPECT_EQ(c.limits.max_header_bytes, 2000u);
  EXPECT_EQ(c.limits.max_headers, 20u);
  EXPECT_EQ(c.limits.max_body_bytes, 0u);
  EXPECT_TRUE(c.sqpoll);
  EXPECT_TRUE(c.pin_cpus);
}

TEST(OptionsTest, LongFlagsWithSeparateValues) {
  absl::StatusOr<Options> options =
      Parse({"--port", "8081", "--accept-threads", "4", "--accept-capacity", "600", "--workers",
             "8", "--address", "10.0.0.1", "--header-timeout", "5"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.port, 8081);
  EXPECT_EQ(options->config.accept_threads, 4);
  EXPECT_EQ(options->config.accept_capacity, 600u);
  EXPECT_EQ(options->config.workers, 8);
  EXPECT_EQ(options->config.address, "10.0.0.1");
  EXPECT_EQ(options->config.header_timeout_ms, 5000u);
}

TEST(OptionsTest, WorkerThreadsIsAnAliasOfWorkers) {
  absl::StatusOr<Options> options = Parse({"--worker-threads=300"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.workers, 300);
  options = Parse({"--worker-threads", "12"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.workers, 12);
}

// One set of defaults (issue 23 item 1): the struct's, whatever else is
// given; -w no longer follows -A, which a ServerConfig built by hand could
// not do.
TEST(OptionsTest, WorkersDefaultToTheCpuCountWhateverTheAcceptThreads) {
  absl::StatusOr<Options> options = Parse({"-A", "3"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.workers, Cpus());
  EXPECT_EQ(options->config.workers, ServerConfig().workers);
  options = Parse({"-w", "5", "-A", "3"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.workers, 5);
  options = Parse({"--workers=0", "-A", "3"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.workers, 0);  // SLOW handlers inline
}

TEST(OptionsTest, LastValueWins) {
  absl::StatusOr<Options> options = Parse({"-p", "1", "--port=2", "-p3"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.port, 3);
}

TEST(OptionsTest, RangeEdgesAreAccepted) {
  absl::StatusOr<Options> options =
      Parse({"-p", "0", "-A", "1", "-C", "1", "-w", "0"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.port, 0);
  EXPECT_EQ(options->config.accept_threads, 1);
  EXPECT_EQ(options->config.accept_capacity, 1u);
  EXPECT_EQ(options->config.workers, 0);

  options = Parse({"-p", "65535", "-A", "1024", "-C", "16777215", "-w", "10000"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.port, 65535);
  EXPECT_EQ(options->config.accept_threads, 1024);
  EXPECT_EQ(options->config.accept_capacity, 16777215u);
  EXPECT_EQ(options->config.workers, 10000);
}

TEST(OptionsTest, Durations) {
  absl::StatusOr<Options> options =
      Parse({"--header-timeout=500ms", "--idle-timeout=30s", "--send-timeout=2m",
             "--shutdown-timeout=0", "--body-timeout=45s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.header_timeout_ms, 500u);
  EXPECT_EQ(options->config.body_timeout_ms, 45'000u);
  EXPECT_EQ(options->config.idle_timeout_ms, 30'000u);
  EXPECT_EQ(options->config.send_timeout_ms, 120'000u);
  EXPECT_EQ(options->config.shutdown_timeout_ms, 0u);

  EXPECT_EQ(Parse({"--header-timeout=2h"})->config.header_timeout_ms, 7'200'000u);
  EXPECT_EQ(Parse({"--header-timeout=24h"})->config.header_timeout_ms, 86'400'000u);

  options = Parse({"--header-timeout=7", "--idle-timeout=0ms", "--send-timeout=1440m",
                   "--shutdown-timeout=86400000ms"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.header_timeout_ms, 7000u);  // plain numbers are seconds
  EXPECT_EQ(options->config.idle_timeout_ms, 0u);
  EXPECT_EQ(options->config.send_timeout_ms, 86'400'000u);
  EXPECT_EQ(options->config.shutdown_timeout_ms, 86'400'000u);
}

TEST(OptionsTest, DeferAcceptIsWholeSecondsRoundedUp) {
  EXPECT_EQ(Parse({})->config.defer_accept_s, 1u);  // as h2o
  EXPECT_EQ(Parse({"--defer-accept=0"})->config.defer_accept_s, 0u);
  EXPECT_EQ(Parse({"--defer-accept=3"})->config.defer_accept_s, 3u);
  EXPECT_EQ(Parse({"--defer-accept=1500ms"})->config.defer_accept_s, 2u);
  EXPECT_EQ(Parse({"--defer-accept=1ms"})->config.defer_accept_s, 1u);
  EXPECT_EQ(Parse({"--defer-accept=2m"})->config.defer_accept_s, 120u);
  ExpectError({"--defer-accept=x"}, "--defer-accept");
  ExpectError({"--defer-accept=-1"}, "--defer-accept");
}

TEST(OptionsTest, GzipFlags) {
  const auto defaults = Parse({});
  EXPECT_FALSE(defaults->config.compression.enabled);
  EXPECT_EQ(defaults->config.compression.min_bytes, 1024u);
  EXPECT_EQ(defaults->config.compression.level, 1);
  const auto on = Parse({"--gzip=on", "--gzip-min-bytes=0", "--gzip-level", "9"});
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->config.compression.enabled);
  EXPECT_EQ(on->config.compression.min_bytes, 0u);
  EXPECT_EQ(on->config.compression.level, 9);
  EXPECT_FALSE(Parse({"--gzip=on", "--gzip=off"})->config.compression.enabled);
  ExpectError({"--gzip=yes"}, "--gzip");
  ExpectError({"--gzip-level=0"}, "--gzip-level");
  ExpectError({"--gzip-level=10"}, "--gzip-level");
  ExpectError({"--gzip-min-bytes=-1"}, "--gzip-min-bytes");
}

TEST(OptionsTest, WorkerSchedIsBatchOrNormal) {
  EXPECT_TRUE(Parse({})->config.workers_batch_sched);
  EXPECT_TRUE(Parse({"--worker-sched=batch"})->config.workers_batch_sched);
  EXPECT_FALSE(Parse({"--worker-sched=normal"})->config.workers_batch_sched);
  ExpectError({"--worker-sched=fifo"}, "--worker-sched");
  ExpectError({"--worker-sched="}, "--worker-sched");
}

TEST(OptionsTest, ProxyProtocolIsOffUnlessGiven) {
  EXPECT_FALSE(Parse({})->config.proxy_protocol);
  EXPECT_TRUE(Parse({"--proxy-protocol"})->config.proxy_protocol);
  // A switch: it takes no value.
  ExpectError({"--proxy-protocol=v2"}, "proxy-protocol");
}

TEST(OptionsTest, BodyMinimumRate) {
  absl::StatusOr<Options> options = Parse({"--body-min-rate=500", "--body-rate-window=30s"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.body_min_rate, 500u);
  EXPECT_EQ(options->config.body_rate_window_ms, 30'000u);
  options = Parse({"--body-min-rate", "0", "--body-rate-window=1000ms"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.body_min_rate, 0u);  // off
  EXPECT_EQ(options->config.body_rate_window_ms, 1000u);
  EXPECT_EQ(Parse({"--body-min-rate=1k"})->config.body_min_rate, 1024u);  // a size
  ExpectError({"--body-min-rate=1x"}, "--body-min-rate");
  ExpectError({"--body-min-rate=-1"}, "--body-min-rate");
  ExpectError({"--body-rate-window=500ms"}, "--body-rate-window");
  ExpectError({"--body-rate-window=0"}, "--body-rate-window");
  ExpectError({"--body-rate-window=2h"}, "--body-rate-window");
}

TEST(OptionsTest, BadDurations) {
  ExpectError({"--header-timeout=abc"}, "--header-timeout");
  ExpectError({"--idle-timeout="}, "--idle-timeout");
  ExpectError({"--send-timeout=ms"}, "--send-timeout");
  ExpectError({"--send-timeout=1.5s"}, "--send-timeout");
  ExpectError({"--shutdown-timeout=-1"}, "--shutdown-timeout");
  ExpectError({"--header-timeout=25h"}, "--header-timeout");
  ExpectError({"--header-timeout=10d"}, "--header-timeout");
  ExpectError({"--header-timeout=86401"}, "--header-timeout");  // over a day
  ExpectError({"--header-timeout=1441m"}, "--header-timeout");
  ExpectError({"--header-timeout=86400001ms"}, "--header-timeout");
  ExpectError({"--body-timeout=x"}, "--body-timeout");
}

TEST(OptionsTest, Endpoints) {
  absl::StatusOr<Options> options = Parse({"--metrics-path=/stats", "--health-path", "/up"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.metrics_path, "/stats");
  EXPECT_EQ(options->config.health_path, "/up");

  // An empty path turns an endpoint off.
  options = Parse({"--metrics-path=", "--health-path="});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.metrics_path, "");
  EXPECT_EQ(options->config.health_path, "");

  ExpectError({"--metrics-path=metrics"}, "--metrics-path");
  ExpectError({"--health-path=healthz"}, "--health-path");
}

TEST(OptionsTest, StaticFiles) {
  absl::StatusOr<Options> defaults = Parse({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->config.open_file_cache_entries, 1000u);
  EXPECT_EQ(defaults->config.open_file_cache_valid_ms, 1000u);
  EXPECT_EQ(defaults->config.file_splice_min_bytes, 65536u);

  absl::StatusOr<Options> options =
      Parse({"--open-file-cache=0", "--open-file-cache-valid=250ms",
             "--file-cache-bytes", "1048576", "--file-splice=0", "--file-splice-pipe=262144"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.open_file_cache_entries, 0u);
  EXPECT_EQ(options->config.open_file_cache_valid_ms, 250u);
  EXPECT_EQ(options->config.file_cache_bytes, 1048576u);
  EXPECT_EQ(options->config.file_splice_min_bytes, 0u);
  EXPECT_EQ(options->config.file_splice_pipe_bytes, 262144u);
  // 0 checks every request.
  options = Parse({"--open-file-cache-valid=0"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.open_file_cache_valid_ms, 0u);

  ExpectError({"--open-file-cache=-1"}, "--open-file-cache");
  ExpectError({"--open-file-cache=600000"}, "--open-file-cache");
  ExpectError({"--open-file-cache-valid=soon"}, "--open-file-cache-valid");
  ExpectError({"--file-cache-bytes=1x"}, "--file-cache-bytes");
  ExpectError({"--file-splice=big"}, "--file-splice");
  ExpectError({"--file-splice-pipe=100"}, "--file-splice-pipe");
}

TEST(OptionsTest, Help) {
  for (const char* flag : {"-h", "--help", "-?"}) {
    absl::StatusOr<Options> options = Parse({flag});
    ASSERT_TRUE(options.ok()) << flag << ": " << options.status();
    EXPECT_TRUE(options->help) << flag;
  }
  // Help alongside other flags still asks for help.
  absl::StatusOr<Options> options = Parse({"-p", "1", "-?"});
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->help);
}

TEST(OptionsTest, UsageMentionsEveryOption) {
  const std::string usage = UsageText("uring-http");
  for (const char* name :
       {"--port", "--address", "--accept-threads", "--accept-capacity", "--workers",
        "--worker-threads", "--verbose", "--help",
        "--max-request-line", "--max-header-bytes", "--max-headers", "--max-body-bytes",
        "--max-response-header-bytes", "--header-timeout", "--idle-timeout", "--send-timeout", "--shutdown-timeout",
        "--sqpoll", "--pin-cpus", "--send-zc", "--io-uring-disable", "--metrics-path",
        "--health-path", "--open-file-cache", "--open-file-cache-valid", "--file-cache-bytes",
        "--file-splice", "--file-splice-pipe", "--defer-accept", "--worker-sched",
        "--recv-buffer-size", "--recv-buffers", "--takeover", "--control-socket",
        "-p,", "-A,", "-C,", "-w,", "-v,", "-h,"}) {
    EXPECT_NE(usage.find(name), std::string::npos) << name;
  }
  EXPECT_NE(usage.find("Usage: uring-http "), std::string::npos);
}

TEST(OptionsTest, MalformedNumbersNameTheOption) {
  ExpectError({"--port=12x"}, "--port");
  ExpectError({"-p", "12x"}, "--port");
  ExpectError({"--port=abc"}, "'abc'");
  ExpectError({"--port="}, "--port");
  ExpectError({"--port", ""}, "--port");
  ExpectError({"-A", "-1"}, "--accept-threads");
  ExpectError({"-C", "+5"}, "--accept-capacity");
  ExpectError({"-w", " 4"}, "--workers");
  ExpectError({"--worker-threads=4.0"}, "--workers");
  ExpectError({"--max-headers=1e3"}, "--max-headers");
  // 20 digits would overflow 64 bits: refused, not wrapped.
  ExpectError({"--max-body-bytes=18446744073709551617"}, "--max-body-bytes");
}

TEST(OptionsTest, SendZcThreshold) {
  for (const auto& [arg, want] : {std::pair<std::string, uint32_t>{"--send-zc=0", 0},
                                  {"--send-zc=1024", 1024},
                                  {"--send-zc=65536", 65536}}) {
    absl::StatusOr<Options> options = Parse({arg});
    ASSERT_TRUE(options.ok()) << arg << ": " << options.status();
    EXPECT_EQ(options->config.send_zc_min_bytes, want) << arg;
  }
  ExpectError({"--send-zc=1023"}, "at least 1024");
  ExpectError({"--send-zc=1"}, "--send-zc");
  ExpectError({"--send-zc=big"}, "--send-zc");
  ExpectError({"--send-zc="}, "--send-zc");
  ExpectError({"--send-zc=1073741825"}, "--send-zc");
}

TEST(OptionsTest, IoUringDisable) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->config.ring_defer_taskrun);
  EXPECT_TRUE(options->config.ring_single_issuer);
  EXPECT_TRUE(options->config.ring_coop_taskrun);
  EXPECT_TRUE(options->config.ring_registered_fd);
  options = Parse({"--io-uring-disable=defer-taskrun,registered-ring-fd"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->config.ring_defer_taskrun);
  EXPECT_TRUE(options->config.ring_single_issuer);
  EXPECT_TRUE(options->config.ring_coop_taskrun);
  EXPECT_FALSE(options->config.ring_registered_fd);
  options = Parse({"--io-uring-disable", "single-issuer,coop-taskrun"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->config.ring_single_issuer);
  EXPECT_FALSE(options->config.ring_coop_taskrun);
  ExpectError({"--io-uring-disable=sqpoll"}, "--io-uring-disable");
  ExpectError({"--io-uring-disable="}, "defer-taskrun, single-issuer");
  ExpectError({"--io-uring-disable=defer-taskrun,"}, "--io-uring-disable");
}

TEST(OptionsTest, OutOfRangeValuesNameTheOptionAndRange) {
  ExpectError({"-A", "0"}, "--accept-threads");
  ExpectError({"-A", "0"}, "[1, 1024]");
  ExpectError({"-A", "1025"}, "--accept-threads");
  ExpectError({"--port=70000"}, "--port");
  ExpectError({"--port=70000"}, "[0, 65535]");
  ExpectError({"-p", "65536"}, "--port");
  ExpectError({"-C", "0"}, "--accept-capacity");
  ExpectError({"-C", "16777216"}, "--accept-capacity");
  ExpectError({"-w", "10001"}, "--workers");
  ExpectError({"--max-request-line=63"}, "--max-request-line");
  ExpectError({"--max-header-bytes=1048577"}, "--max-header-bytes");
  ExpectError({"--max-headers=0"}, "--max-headers");
  ExpectError({"--max-body-bytes=1073741825"}, "--max-body-bytes");
  ExpectError({"--max-response-header-bytes=1023"}, "[1024, 16777216]");
  ExpectError({"--max-response-header-bytes=16777217"}, "--max-response-header-bytes");
}

TEST(OptionsTest, ResponseHeaderLimit) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.max_response_header_bytes, 65536u);
  options = Parse({"--max-response-header-bytes=4096"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.max_response_header_bytes, 4096u);
}

TEST(OptionsTest, LoadSheddingAndRateLimits) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.max_in_flight, ServerConfig().max_in_flight);
  EXPECT_FALSE(options->config.rate_limit.enabled());
  EXPECT_EQ(options->config.rate_limit_clients, ServerConfig().rate_limit_clients);
  options = Parse({"--max-in-flight=500", "--rate-limit=600/m", "--rate-limit-burst=20",
                   "--rate-limit-clients", "1000"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.max_in_flight, 500u);
  EXPECT_DOUBLE_EQ(options->config.rate_limit.per_second, 10);
  EXPECT_EQ(options->config.rate_limit.burst, 20u);
  EXPECT_EQ(options->config.rate_limit_clients, 1000u);
  for (const auto& [text, per_second] :
       {std::pair<std::string, double>{"10", 10}, {"10/s", 10}, {"2.5", 2.5}, {"3600/h", 1},
        {"0", 0}}) {
    options = Parse({"--rate-limit=" + text});
    ASSERT_TRUE(options.ok()) << text << ": " << options.status();
    EXPECT_DOUBLE_EQ(options->config.rate_limit.per_second, per_second) << text;
  }
  for (const char* bad : {"", "x", "10/d", "-1", "1e3", "10/", "/s", "nan", "10 /s"}) {
    ExpectError({std::string("--rate-limit=") + bad}, "--rate-limit");
  }
  ExpectError({"--max-in-flight=-1"}, "--max-in-flight");
  ExpectError({"--rate-limit-clients=0"}, "--rate-limit-clients");
}

TEST(OptionsTest, TlsClientCertificates) {
  using ClientAuth = tls::TlsSettings::ClientAuth;
  absl::StatusOr<Options> options = Parse({"--tls-cert=c.pem", "--tls-key=k.pem"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->config.tls.verifies_clients());
  // Required once a CA is given.
  options = Parse({"--tls-cert=c.pem", "--tls-key=k.pem", "--tls-client-ca=ca.pem"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.tls.client_ca_path, "ca.pem");
  EXPECT_EQ(options->config.tls.client_auth, ClientAuth::kRequired);
  options = Parse({"--tls-cert=c.pem", "--tls-key=k.pem", "--tls-client-ca", "ca.pem",
                   "--tls-client-auth=optional"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.tls.client_auth, ClientAuth::kOptional);
  ExpectError({"--tls-client-ca=ca.pem"}, "--tls-cert");
  ExpectError({"--tls-cert=c.pem", "--tls-key=k.pem", "--tls-client-auth=optional"},
              "--tls-client-ca");
  ExpectError({"--tls-cert=c.pem", "--tls-key=k.pem", "--tls-client-ca=ca.pem",
               "--tls-client-auth=maybe"},
              "--tls-client-auth");
  ExpectError({"--tls-client-ca="}, "--tls-client-ca");
}

TEST(OptionsTest, UnknownOptionsAreNamed) {
  ExpectError({"--bogus"}, "--bogus");
  ExpectError({"--bogus=1"}, "--bogus");
  ExpectError({"-x"}, "-x");
  ExpectError({"-p", "1", "-z"}, "-z");
  // Inside a group of short flags, after a long one.
  ExpectError({"-vx"}, "'-x'");
  ExpectError({"--verbose", "-xv"}, "'-x'");
  ExpectError({"--port=1", "-vxv"}, "'-x'");
}

TEST(OptionsTest, ValueGivenToAFlagThatTakesNoneIsNamed) {
  ExpectError({"--verbose=1"}, "'--verbose' takes no value");
  ExpectError({"--help=yes"}, "'--help' takes no value");
  ExpectError({"--sqpoll=on"}, "'--sqpoll' takes no value");
  ExpectError({"--pin-cpus=0"}, "'--pin-cpus' takes no value");
}

TEST(OptionsTest, MissingValuesAreNamed) {
  ExpectError({"--port"}, "--port");
  ExpectError({"-p"}, "-p");
  ExpectError({"-A"}, "-A");
  ExpectError({"--header-timeout"}, "--header-timeout");
  ExpectError({"-v", "--workers"}, "--workers");
}

TEST(OptionsTest, TlsIsOffUnlessACertificateIsGiven) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->config.tls.enabled());
  EXPECT_EQ(options->config.plain_port, -1);
  EXPECT_EQ(options->config.tls.handshake_timeout_ms, 10000u);
  EXPECT_EQ(options->config.tls.offload, tls::TlsSettings::Offload::kAuto);
  EXPECT_EQ(options->config.tls.workers, -1);
}

TEST(OptionsTest, TlsCertificatePairsInOrder) {
  absl::StatusOr<Options> options =
      Parse({"--tls-cert=a.pem", "--tls-key=a.key", "--tls-cert", "b.pem", "--tls-key", "b.key",
             "--plain-port=8080", "--handshake-timeout=2s", "--tls-ticket-rotation=10m",
             "--tls-offload=rsa", "--tls-workers=3"});
  ASSERT_TRUE(options.ok()) << options.status();
  const tls::TlsSettings& t = options->config.tls;
  ASSERT_EQ(t.certificates.size(), 2u);
  EXPECT_EQ(t.certificates[0].cert_path, "a.pem");
  EXPECT_EQ(t.certificates[0].key_path, "a.key");
  EXPECT_EQ(t.certificates[1].cert_path, "b.pem");
  EXPECT_EQ(t.certificates[1].key_path, "b.key");
  EXPECT_EQ(options->config.plain_port, 8080);
  EXPECT_EQ(t.handshake_timeout_ms, 2000u);
  EXPECT_EQ(t.ticket_key_rotation_s, 600u);
  EXPECT_EQ(t.offload, tls::TlsSettings::Offload::kRsa);
  EXPECT_EQ(t.workers, 3);
  EXPECT_EQ(Parse({"--tls-cert=a", "--tls-key=b", "--tls-offload=off"})->config.tls.offload,
            tls::TlsSettings::Offload::kOff);
  EXPECT_EQ(Parse({"--tls-cert=a", "--tls-key=b", "--tls-offload=on"})->config.tls.offload,
            tls::TlsSettings::Offload::kOn);
  EXPECT_EQ(Parse({"--tls-cert=a", "--tls-key=b", "--tls-offload=auto"})->config.tls.offload,
            tls::TlsSettings::Offload::kAuto);
  EXPECT_EQ(Parse({"--tls-cert=a", "--tls-key=b", "--plain-port=0"})->config.plain_port, 0);
}

TEST(OptionsTest, TlsMistakesAreNamed) {
  ExpectError({"--tls-cert=a.pem"}, "--tls-cert a.pem has no --tls-key");
  ExpectError({"--tls-cert=a.pem", "--tls-cert=b.pem", "--tls-key=b.key"},
              "--tls-cert a.pem has no --tls-key");
  ExpectError({"--tls-key=a.key"}, "--tls-key a.key has no --tls-cert");
  ExpectError({"--tls-cert=a", "--tls-key=b", "--tls-key=c"}, "--tls-key c has no --tls-cert");
  ExpectError({"--tls-cert="}, "invalid value '' for --tls-cert: expected a file");
  ExpectError({"--plain-port=8080"}, "--plain-port goes with --tls-cert");
  ExpectError({"--tls-cert=a", "--tls-key=b", "--plain-port=65536"}, "--plain-port");
  ExpectError({"--tls-offload=always"}, "expected auto, on, rsa or off");
  ExpectError({"--tls-workers=-1"}, "--tls-workers");
  ExpectError({"--handshake-timeout=soon"}, "--handshake-timeout");
}

TEST(OptionsTest, StrayPositionalArgumentsAreRejected) {
  ExpectError({"extra"}, "'extra'");
  ExpectError({"-p", "1", "extra"}, "'extra'");
  // An operand before the options is caught too.
  ExpectError({"extra", "-p", "1"}, "'extra'");
  ExpectError({"-p", "1", "--", "after"}, "'after'");
}

TEST(OptionsTest, ParsingTwiceStartsAfresh) {
  // An error in the middle of a group of short flags ("-x" of "-xv") must
  // leave nothing behind for the next parse (getopt_long, used before,
  // kept its place in that argv).
  Args first({"-xv"});
  EXPECT_FALSE(TryParseOptions(first.argc(), first.argv()).ok());
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->config.verbose);

  options = Parse({"-p", "5"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.port, 5);
  options = Parse({});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.port, 9000);
}

TEST(OptionsTest, RestartFlags) {
  absl::StatusOr<Options> options = Parse({});
  ASSERT_TRUE(options.ok());
  // The shipped server takes systemd's sockets and can be taken over.
  EXPECT_TRUE(options->config.systemd_sockets);
  EXPECT_TRUE(options->config.accept_takeover);
  EXPECT_TRUE(options->config.control_socket.empty());  // the default name
  EXPECT_FALSE(options->config.takeover);

  options = Parse({"--takeover"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->config.takeover);
  EXPECT_TRUE(options->config.takeover_from.empty());
  options = Parse({"--takeover=@old", "--control-socket=/run/uring-http.sock"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->config.takeover);
  EXPECT_EQ(options->config.takeover_from, "@old");
  EXPECT_TRUE(options->config.accept_takeover);
  EXPECT_EQ(options->config.control_socket, "/run/uring-http.sock");
  options = Parse({"--control-socket", "none"});
  ASSERT_TRUE(options.ok());
  EXPECT_FALSE(options->config.accept_takeover);

  // An optional value goes with '=': a separate word is an operand.
  ExpectError({"--takeover", "@old"}, "'@old'");
  ExpectError({"--takeover="}, "--takeover");
  ExpectError({"--takeover=" + std::string(108, 'x')}, "--takeover");
  ExpectError({"--control-socket="}, "--control-socket");
  ExpectError({"--control-socket=@"}, "--control-socket");
  ExpectError({"--control-socket"}, "needs a value");
}

// Sizes take units (issue 23 item 8): k, K, M, G, T and KiB..TiB are powers
// of 1024 (as nginx's k/m/g), kB, MB, GB, TB powers of 1000 (as GNU dd's);
// B is bytes.
TEST(OptionsTest, SizesTakeUnits) {
  struct Case {
    std::string arg;
    uint64_t bytes;
  };
  for (const Case& c : std::vector<Case>{{"1GB", 1'000'000'000},
                                         {"1GiB", 1ull << 30},
                                         {"1G", 1ull << 30},
                                         {"1g", 1ull << 30},
                                         {"512MiB", 512ull << 20},
                                         {"512M", 512ull << 20},
                                         {"512m", 512ull << 20},
                                         {"3MB", 3'000'000},
                                         {"64k", 64 << 10},
                                         {"64K", 64 << 10},
                                         {"64KiB", 64 << 10},
                                         {"64kB", 64'000},
                                         {"64KB", 64'000},
                                         {"100", 100},
                                         {"100B", 100},
                                         {"0", 0}}) {
    absl::StatusOr<Options> options = Parse({"--max-body-bytes=" + c.arg});
    ASSERT_TRUE(options.ok()) << c.arg << ": " << options.status();
    EXPECT_EQ(options->config.limits.max_body_bytes, c.bytes) << c.arg;
  }
  // Every size flag takes them.
  absl::StatusOr<Options> options =
      Parse({"--max-request-line=16k", "--max-header-bytes=32KiB", "--max-response-header-bytes=1M",
             "--body-min-rate=2k", "--gzip-min-bytes=4k", "--send-zc=256KiB",
             "--recv-buffer-size=4k", "--file-cache-bytes=1G", "--file-splice=1MiB",
             "--file-splice-pipe=512k"});
  ASSERT_TRUE(options.ok()) << options.status();
  const ServerConfig& c = options->config;
  EXPECT_EQ(c.limits.max_request_line, 16u << 10);
  EXPECT_EQ(c.limits.max_header_bytes, 32u << 10);
  EXPECT_EQ(c.max_response_header_bytes, 1u << 20);
  EXPECT_EQ(c.body_min_rate, 2u << 10);
  EXPECT_EQ(c.compression.min_bytes, 4u << 10);
  EXPECT_EQ(c.send_zc_min_bytes, 256u << 10);
  EXPECT_EQ(c.recv_buffer_size, 4u << 10);
  EXPECT_EQ(c.file_cache_bytes, 1ull << 30);
  EXPECT_EQ(c.file_splice_min_bytes, 1ull << 20);
  EXPECT_EQ(c.file_splice_pipe_bytes, 512u << 10);
}

TEST(OptionsTest, BadSizesAreNamed) {
  for (const std::string& bad :
       {"1X", "1 G", "G", "1.5G", "-1k", "1kk", "1iB", "1Gi", "1GiBs", "0x10", "", "k1"}) {
    ExpectError({"--max-body-bytes=" + bad}, "--max-body-bytes");
  }
  ExpectError({"--max-body-bytes=1X"}, "expected a size");
  // Past the flag's range, and past 64 bits: refused, not wrapped.
  ExpectError({"--max-body-bytes=2GiB"}, "--max-body-bytes");
  ExpectError({"--file-splice=16777216T"}, "--file-splice");
  ExpectError({"--file-splice=18446744073709551616"}, "--file-splice");
  ExpectError({"--file-splice=99999999999999999999999"}, "--file-splice");
}

}  // namespace
TEST(OptionsTest, ListenAddresses) {
  absl::StatusOr<Options> options =
      Parse({"--listen=[::1]:8080", "--listen=unix:/run/app.sock", "--listen=:8443,tls",
             "--admin-listen=127.0.0.1:9100", "--tls-cert=a", "--tls-key=b", "--address=::1"});
  ASSERT_TRUE(options.ok()) << options.status();
  const auto& l = options->config.listen;
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].address, "[::1]:8080");
  EXPECT_FALSE(l[0].tls);
  EXPECT_EQ(l[1].address, "unix:/run/app.sock");
  EXPECT_EQ(l[2].address, ":8443");
  EXPECT_TRUE(l[2].tls);
  EXPECT_EQ(l[3].address, "127.0.0.1:9100");
  EXPECT_TRUE(l[3].admin);
  EXPECT_FALSE(l[3].tls);
  EXPECT_EQ(options->config.address, "::1");
  ExpectError({"--listen=::1:80"}, "--listen");
  ExpectError({"--listen=8080"}, "--listen");
  ExpectError({"--listen=unix:relative"}, "--listen");
  ExpectError({"--admin-listen=127.0.0.1"}, "--admin-listen");
  ExpectError({"--listen=:443,tls"}, "--tls-cert");
}

}  // namespace uring_http::serving
