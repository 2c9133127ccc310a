// Tests for HTTP-dates: IMF-fixdate formatting checked against libc over
// many instants, the three forms and what is not one, RFC 850's two-digit
// years.
#include "src/http/http_date.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace uring_http::http {
namespace {

std::string Date(int64_t t) {
  char buffer[kHttpDateSize];
  const size_t n = FormatHttpDate(t, buffer);
  EXPECT_EQ(n, kHttpDateSize);
  return std::string(buffer, n);
}

// 2025-06-01 00:00:00 UTC: "now" for the two-digit-year tests.
constexpr int64_t k2025 = 1748736000;
constexpr int64_t kNov1994 = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT

// Parses with a fixed "now" so that RFC 850 years are deterministic; returns
// INT64_MIN for "invalid".
int64_t Parse(std::string_view text, int64_t now = k2025) {
  int64_t t = 12345;
  if (!ParseHttpDateAt(text, now, &t)) {
    EXPECT_EQ(t, 12345) << "the output is untouched on failure";
    return INT64_MIN;
  }
  return t;
}

// ---- FormatHttpDate

TEST(FormatHttpDateTest, KnownInstants) {
  EXPECT_EQ(Date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(Date(kNov1994), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(Date(951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
  EXPECT_EQ(Date(1709164800), "Thu, 29 Feb 2024 00:00:00 GMT");
  EXPECT_EQ(Date(2147483647), "Tue, 19 Jan 2038 03:14:07 GMT");
  EXPECT_EQ(Date(2147483648), "Tue, 19 Jan 2038 03:14:08 GMT");
  EXPECT_EQ(Date(4102444800), "Fri, 01 Jan 2100 00:00:00 GMT");
  EXPECT_EQ(Date(4107542399), "Sun, 28 Feb 2100 23:59:59 GMT");
  EXPECT_EQ(Date(4107542400), "Mon, 01 Mar 2100 00:00:00 GMT");  // 2100 is not a leap year
  EXPECT_EQ(Date(-1), "Wed, 31 Dec 1969 23:59:59 GMT");
  EXPECT_EQ(Date(253402300799), "Fri, 31 Dec 9999 23:59:59 GMT");
}

TEST(FormatHttpDateTest, ClampsToFourDigitYears) {
  EXPECT_EQ(Date(253402300800), "Fri, 31 Dec 9999 23:59:59 GMT");
  EXPECT_EQ(Date(INT64_MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
  EXPECT_EQ(Date(-62167219200), "Sat, 01 Jan 0000 00:00:00 GMT");
  EXPECT_EQ(Date(-62167219201), "Sat, 01 Jan 0000 00:00:00 GMT");
  EXPECT_EQ(Date(INT64_MIN), "Sat, 01 Jan 0000 00:00:00 GMT");
}

// Instants worth checking: every day boundary around leap days and the
// 2038 and 2100 edges, plus many random ones.
std::vector<int64_t> InterestingInstants() {
  std::vector<int64_t> out;
  for (int64_t base : {int64_t{0}, int64_t{68169600} /*1972-02-29*/, int64_t{951782400},
                       int64_t{1709164800}, int64_t{2147483647}, int64_t{4107542400},
                       int64_t{-2208988800} /*1900-01-01*/, int64_t{-62135596800} /*0001*/,
                       int64_t{253402214400} /*9999-12-31*/}) {
    for (int64_t d = -3; d <= 3; ++d) {
      for (int64_t s : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{43200}}) {
        out.push_back(base + d * 86400 + s);
      }
    }
  }
  std::mt19937_64 rng(2024);
  std::uniform_int_distribution<int64_t> any(-62135596800, 253402300799);
  std::uniform_int_distribution<int64_t> recent(0, 4200000000);
  for (int i = 0; i < 20000; ++i) out.push_back(i % 2 ? any(rng) : recent(rng));
  return out;
}

TEST(FormatHttpDateTest, AgreesWithLibc) {
  for (int64_t t : InterestingInstants()) {
    if (t < -62135596800 || t > 253402300799) continue;  // years 1-9999 for libc
    const time_t tt = static_cast<time_t>(t);
    tm parts;
    ASSERT_NE(gmtime_r(&tt, &parts), nullptr);
    // strftime's %Y does not pad years before 1000: the year apart.
    char head[32], tail[32];
    ASSERT_EQ(strftime(head, sizeof head, "%a, %d %b ", &parts), 12u) << t;
    ASSERT_EQ(strftime(tail, sizeof tail, " %H:%M:%S GMT", &parts), 13u) << t;
    char year[16];
    snprintf(year, sizeof year, "%04d", parts.tm_year + 1900);
    ASSERT_EQ(Date(t), std::string(head) + year + tail) << t;
  }
}

TEST(FormatHttpDateTest, RoundTrips) {
  for (int64_t t : InterestingInstants()) {
    if (t < -62167219200 || t > 253402300799) continue;
    ASSERT_EQ(Parse(Date(t)), t) << Date(t);
  }
}

// ---- ParseHttpDate

TEST(ParseHttpDateTest, ThreeForms) {
  EXPECT_EQ(Parse("Sun, 06 Nov 1994 08:49:37 GMT"), kNov1994);
  EXPECT_EQ(Parse("Sunday, 06-Nov-94 08:49:37 GMT"), kNov1994);
  EXPECT_EQ(Parse("Sun Nov  6 08:49:37 1994"), kNov1994);
  EXPECT_EQ(Parse("Sun Nov 06 08:49:37 1994"), kNov1994);  // 2DIGIT is allowed too
  EXPECT_EQ(Parse("Wed Jan 19 03:14:07 2038"), 2147483647);
}

TEST(ParseHttpDateTest, EveryDayAndMonthName) {
  const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const char* long_days[] = {"Sunday", "Monday", "Tuesday", "Wednesday",
                             "Thursday", "Friday", "Saturday"};
  const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int m = 0; m < 12; ++m) {
    // The 1st of each month of 2023 at noon.
    tm parts{};
    parts.tm_year = 123;
    parts.tm_mon = m;
    parts.tm_mday = 1;
    parts.tm_hour = 12;
    const int64_t want = timegm(&parts);
    const std::string day = days[parts.tm_wday];
    const std::string month = months[m];
    EXPECT_EQ(Parse(day + ", 01 " + month + " 2023 12:00:00 GMT"), want) << month;
    EXPECT_EQ(Parse(std::string(long_days[parts.tm_wday]) + ", 01-" + month + "-23 12:00:00 GMT"),
              want)
        << month;
    EXPECT_EQ(Parse(day + " " + month + "  1 12:00:00 2023"), want) << month;
  }
}

TEST(ParseHttpDateTest, WrongWeekdayIsAccepted) {
  // Documented choice: the date fields decide; the day name is only checked
  // to be one.
  EXPECT_EQ(Parse("Mon, 06 Nov 1994 08:49:37 GMT"), kNov1994);
  EXPECT_EQ(Parse("Friday, 06-Nov-94 08:49:37 GMT"), kNov1994);
  EXPECT_EQ(Parse("Sat Nov  6 08:49:37 1994"), kNov1994);
}

TEST(ParseHttpDateTest, LeapYears) {
  EXPECT_EQ(Parse("Tue, 29 Feb 2000 00:00:00 GMT"), 951782400);
  EXPECT_EQ(Parse("Thu, 29 Feb 2024 00:00:00 GMT"), 1709164800);
  EXPECT_EQ(Parse("Wed, 29 Feb 2023 00:00:00 GMT"), INT64_MIN);
  EXPECT_EQ(Parse("Mon, 29 Feb 2100 00:00:00 GMT"), INT64_MIN);  // divisible by 100
  EXPECT_EQ(Parse("Tue, 29 Feb 2400 00:00:00 GMT"), 13574563200);  // and by 400
  EXPECT_EQ(Parse("Thu Feb 29 00:00:00 2024"), 1709164800);
  EXPECT_EQ(Parse("Thu Feb 29 00:00:00 2023"), INT64_MIN);
  EXPECT_EQ(Parse("Thursday, 29-Feb-24 00:00:00 GMT"), 1709164800);
  EXPECT_EQ(Parse("Wednesday, 29-Feb-23 00:00:00 GMT"), INT64_MIN);
}

TEST(ParseHttpDateTest, Extremes) {
  EXPECT_EQ(Parse("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
  EXPECT_EQ(Parse("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
  EXPECT_EQ(Parse("Fri, 31 Dec 9999 23:59:59 GMT"), 253402300799);
  EXPECT_EQ(Parse("Sat, 01 Jan 0000 00:00:00 GMT"), -62167219200);
  EXPECT_EQ(Parse("Tue, 19 Jan 2038 03:14:08 GMT"), 2147483648);
}

TEST(ParseHttpDateTest, LeapSecondCountsAsTheNextMinute) {
  EXPECT_EQ(Parse("Sat, 31 Dec 2016 23:59:60 GMT"), Parse("Sun, 01 Jan 2017 00:00:00 GMT"));
  EXPECT_EQ(Parse("Sat, 31 Dec 2016 23:59:61 GMT"), INT64_MIN);
}

TEST(ParseHttpDateTest, SurroundingWhitespace) {
  EXPECT_EQ(Parse("  Sun, 06 Nov 1994 08:49:37 GMT\t"), kNov1994);
  EXPECT_EQ(Parse(" Sunday, 06-Nov-94 08:49:37 GMT "), kNov1994);
  EXPECT_EQ(Parse("\tSun Nov  6 08:49:37 1994 "), kNov1994);
}

TEST(ParseHttpDateTest, Invalid) {
  const char* invalid[] = {
      "",
      " ",
      "0",
      "784111777",
      "Sun, 06 Nov 1994 08:49:37 UTC",
      "Sun, 06 Nov 1994 08:49:37 gmt",
      "Sun, 06 Nov 1994 08:49:37 +0000",
      "Sun, 06 Nov 1994 08:49:37",
      "Sun, 06 Nov 1994 08:49 GMT",
      "sun, 06 Nov 1994 08:49:37 GMT",   // case-sensitive
      "Sun, 06 nov 1994 08:49:37 GMT",
      "SUN, 06 NOV 1994 08:49:37 GMT",
      "Sun, 6 Nov 1994 08:49:37 GMT",    // day must be 2DIGIT
      "Sun, 06 Nov 94 08:49:37 GMT",
      "Sun,  06 Nov 1994 08:49:37 GMT",
      "Sun,06 Nov 1994 08:49:37 GMT",
      "Sun, 06-Nov-1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",  // a list
      "Sun, 06 Nov 1994 08:49:37 GMTX",
      "Xyz, 06 Nov 1994 08:49:37 GMT",
      "Sun, 00 Nov 1994 08:49:37 GMT",
      "Sun, 31 Nov 1994 08:49:37 GMT",
      "Sun, 32 Jan 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 24:00:00 GMT",
      "Sun, 06 Nov 1994 08:60:00 GMT",
      "Sun, 06 Nov 1994 8:49:37  GMT",
      "Sun, 06 Nov 1994 08-49-37 GMT",
      "Sun, 06 Nov 199x 08:49:37 GMT",
      "Sun, 06 Nov -994 08:49:37 GMT",
      "Sun, 0x Nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:3x GMT",
      "Sun, +6 Nov 1994 08:49:37 GMT",
      "Sun, 06 Nov 1994 08:49:37 GMT\r",
      "Sunday, 06-Nov-94 08:49:37",
      "Sunday, 06 Nov 94 08:49:37 GMT",
      "Sun, 06-Nov-94 08:49:37 GMT",      // short day name in RFC 850 form
      "Sundays, 06-Nov-94 08:49:37 GMT",
      "sunday, 06-Nov-94 08:49:37 GMT",
      "Sunday, 06-Nov-94 08:49:37 UTC",
      "Sunday,  6-Nov-94 08:49:37 GMT",
      "Sunday, 06-Nov-9x 08:49:37 GMT",
      ", 06-Nov-94 08:49:37 GMT",
      "Sun Nov 6 08:49:37 1994",          // asctime needs two places for the day
      "Sun Nov  6 08:49:37 94",
      "Sun Nov  6 08:49:37 1994 GMT",
      "Sun Nov 6  08:49:37 1994",
      "Sun Nov  0 08:49:37 1994",
      "Sun Nov  x 08:49:37 1994",
      "Sun Nov 31 08:49:37 1994",
      "Sun, Nov  6 08:49:37 1994",
      "Sunday Nov  6 08:49:37 1994",
      "1994-11-06T08:49:37Z",
  };
  for (const char* text : invalid) {
    EXPECT_EQ(Parse(text), INT64_MIN) << "\"" << text << "\"";
  }
}

TEST(ParseHttpDateTest, EmbeddedNul) {
  const std::string text("Sun, 06 Nov 1994 08:49:37 GMT\0", 30);
  EXPECT_EQ(Parse(text), INT64_MIN);
}

TEST(ParseHttpDateTest, TwoDigitYearWindow) {
  // Now is 2025: the window is 1976-2075.
  EXPECT_EQ(Parse("Sunday, 06-Nov-94 08:49:37 GMT"), kNov1994);
  EXPECT_EQ(Parse("Wednesday, 01-Jan-70 00:00:00 GMT"), 3155760000);  // 2070, not 1970
  EXPECT_EQ(Parse("Saturday, 01-Jan-00 00:00:00 GMT"), 946684800);
  EXPECT_EQ(Parse("Thursday, 29-Feb-24 00:00:00 GMT"), 1709164800);
  // 2075 is 50 years ahead, not more: kept. 2076 would be more: 1976.
  EXPECT_EQ(Parse("Wednesday, 06-Nov-75 08:49:37 GMT"), 3340255777);
  EXPECT_EQ(Parse("Saturday, 06-Nov-76 08:49:37 GMT"), 216118177);
  // Now is 2090: the window is 2041-2140; "10" is 2110, not 2010.
  constexpr int64_t k2090 = 3799958400;
  EXPECT_EQ(Parse("Wednesday, 01-Jan-10 00:00:00 GMT", k2090), 4417977600);
  EXPECT_EQ(Parse("Tuesday, 01-Jan-41 00:00:00 GMT", k2090), 2240611200);
  EXPECT_EQ(Parse("Friday, 01-Jan-40 00:00:00 GMT", k2090), 5364662400);
  // Near a century: now 1999-12-31, "00" is 2000 and "49" 2049, "50" 1950.
  constexpr int64_t kEndOf1999 = 946684799;
  EXPECT_EQ(Parse("Saturday, 01-Jan-00 00:00:00 GMT", kEndOf1999), 946684800);
  EXPECT_EQ(Parse("Friday, 01-Jan-49 00:00:00 GMT", kEndOf1999), 2493072000);
  EXPECT_EQ(Parse("Sunday, 01-Jan-50 00:00:00 GMT", kEndOf1999), -631152000);
  // Feb 29 depends on which year the window picks.
  EXPECT_EQ(Parse("Tuesday, 29-Feb-00 00:00:00 GMT", k2090), INT64_MIN);  // 2100
  EXPECT_EQ(Parse("Tuesday, 29-Feb-00 00:00:00 GMT", k2025), 951782400);  // 2000
}

TEST(ParseHttpDateTest, OtherFormsDoNotDependOnNow) {
  EXPECT_EQ(Parse("Sun, 06 Nov 1994 08:49:37 GMT", 0), kNov1994);
  EXPECT_EQ(Parse("Sun, 06 Nov 1994 08:49:37 GMT", 253402300799), kNov1994);
  EXPECT_EQ(Parse("Sun Nov  6 08:49:37 1994", -62167219200), kNov1994);
}

TEST(ParseHttpDateTest, WithTheClock) {
  // Correct while the clock reads 1945-2043.
  int64_t t = 0;
  ASSERT_TRUE(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", &t));
  EXPECT_EQ(t, kNov1994);
  ASSERT_TRUE(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT", &t));
  EXPECT_EQ(t, kNov1994);
  EXPECT_FALSE(ParseHttpDate("yesterday", &t));
}

}  // namespace
}  // namespace uring_http::http
