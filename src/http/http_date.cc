#include "src/http/http_date.h"

#include <time.h>

#include <algorithm>

namespace uring_http::http {
namespace {

// ---- civil dates (proleptic Gregorian; H. Hinnant's algorithms)

constexpr int64_t kSecondsPerDay = 86400;

constexpr int64_t DaysFromCivil(int64_t year, int month, int day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

struct Civil {
  int64_t year;
  int month;  // 1-12
  int day;    // 1-31
};

constexpr Civil CivilFromDays(int64_t days) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t day_of_era = days - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t mp = (5 * day_of_year + 2) / 153;
  const int day = static_cast<int>(day_of_year - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {year_of_era + era * 400 + (month <= 2), month, day};
}

static_assert(DaysFromCivil(1970, 1, 1) == 0);
static_assert(DaysFromCivil(2000, 3, 1) == 11017);
static_assert(CivilFromDays(11017).year == 2000 && CivilFromDays(11017).month == 3);

constexpr bool IsLeapYear(int64_t year) {
  return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

constexpr int DaysInMonth(int64_t year, int month) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

constexpr int64_t kMinDate = DaysFromCivil(0, 1, 1) * kSecondsPerDay;
constexpr int64_t kMaxDate = DaysFromCivil(9999, 12, 31) * kSecondsPerDay + kSecondsPerDay - 1;

constexpr std::string_view kDayNames[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::string_view kLongDayNames[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                              "Thursday", "Friday", "Saturday"};
constexpr std::string_view kMonthNames[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

void Put2(int value, char* out) {
  out[0] = static_cast<char>('0' + value / 10);
  out[1] = static_cast<char>('0' + value % 10);
}

// ---- parsing helpers: each returns -1 when the bytes do not fit

int Digit(char c) { return c >= '0' && c <= '9' ? c - '0' : -1; }

int Digits(std::string_view s) {
  int value = 0;
  for (char c : s) {
    const int d = Digit(c);
    if (d < 0) return -1;
    value = value * 10 + d;
  }
  return value;
}

int Month(std::string_view s) {
  for (int i = 0; i < 12; ++i) {
    if (s == kMonthNames[i]) return i + 1;
  }
  return -1;
}

bool IsDayName(std::string_view s) {
  return std::find(std::begin(kDayNames), std::end(kDayNames), s) != std::end(kDayNames);
}

bool IsLongDayName(std::string_view s) {
  return std::find(std::begin(kLongDayNames), std::end(kLongDayNames), s) !=
         std::end(kLongDayNames);
}

// "HH:MM:SS" as seconds since midnight; second 60 is a leap second.
int64_t TimeOfDay(std::string_view s) {
  if (s.size() != 8 || s[2] != ':' || s[5] != ':') return -1;
  const int hour = Digits(s.substr(0, 2));
  const int minute = Digits(s.substr(3, 2));
  const int second = Digits(s.substr(6, 2));
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return -1;
  return hour * 3600 + minute * 60 + second;
}

bool Combine(int64_t year, int month, int day, int64_t time_of_day, int64_t* out) {
  if (year < 0 || month < 1 || day < 1 || day > DaysInMonth(year, month) || time_of_day < 0) {
    return false;
  }
  *out = DaysFromCivil(year, month, day) * kSecondsPerDay + time_of_day;
  return true;
}

// The year ending in `two_digits` within (now's year - 50, now's year + 50].
int64_t WindowYear(int two_digits, int64_t now_unix_seconds) {
  const int64_t now_year = CivilFromDays(FloorDiv(now_unix_seconds, kSecondsPerDay)).year;
  const int64_t low = now_year - 49;
  const int64_t offset = ((two_digits - low) % 100 + 100) % 100;
  return low + offset;
}

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// `now` is read only for the RFC 850 form: null means the clock.
bool ParseDate(std::string_view text, const int64_t* now, int64_t* unix_seconds) {
  const std::string_view s = TrimOws(text);
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  if (s.size() == 29 && s[3] == ',') {
    if (!IsDayName(s.substr(0, 3)) || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
        s[16] != ' ' || s.substr(25) != " GMT") {
      return false;
    }
    const int year = Digits(s.substr(12, 4));
    return Combine(year, Month(s.substr(8, 3)), Digits(s.substr(5, 2)),
                   TimeOfDay(s.substr(17, 8)), unix_seconds);
  }
  // asctime: "Sun Nov  6 08:49:37 1994"
  if (s.size() == 24 && s[3] == ' ') {
    if (!IsDayName(s.substr(0, 3)) || s[7] != ' ' || s[10] != ' ' || s[19] != ' ') return false;
    const int day = s[8] == ' ' ? Digit(s[9]) : Digits(s.substr(8, 2));
    return Combine(Digits(s.substr(20, 4)), Month(s.substr(4, 3)), day,
                   TimeOfDay(s.substr(11, 8)), unix_seconds);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT": a long day name, then 24 bytes.
  constexpr size_t kAfterName = 24;
  if (s.size() <= kAfterName) return false;
  const size_t name = s.size() - kAfterName;
  const std::string_view rest = s.substr(name);
  if (!IsLongDayName(s.substr(0, name)) || rest.substr(0, 2) != ", " || rest[4] != '-' ||
      rest[8] != '-' || rest[11] != ' ' || rest.substr(20) != " GMT") {
    return false;
  }
  const int two_digit_year = Digits(rest.substr(9, 2));
  if (two_digit_year < 0) return false;
  const int64_t year = WindowYear(two_digit_year, now != nullptr ? *now : Now());
  return Combine(year, Month(rest.substr(5, 3)), Digits(rest.substr(2, 2)),
                 TimeOfDay(rest.substr(12, 8)), unix_seconds);
}

}  // namespace

size_t FormatHttpDate(int64_t unix_seconds, char out[kHttpDateSize]) {
  const int64_t t = std::clamp(unix_seconds, kMinDate, kMaxDate);
  const int64_t days = FloorDiv(t, kSecondsPerDay);
  const int64_t seconds = t - days * kSecondsPerDay;
  const Civil civil = CivilFromDays(days);
  // 1970-01-01 was a Thursday (4, counting from Sunday).
  const int64_t weekday = ((days % 7) + 7 + 4) % 7;
  const std::string_view day_name = kDayNames[weekday];
  const std::string_view month_name = kMonthNames[civil.month - 1];
  char* p = out;
  p = std::copy(day_name.begin(), day_name.end(), p);
  *p++ = ',';
  *p++ = ' ';
  Put2(civil.day, p);
  p += 2;
  *p++ = ' ';
  p = std::copy(month_name.begin(), month_name.end(), p);
  *p++ = ' ';
  Put2(static_cast<int>(civil.year / 100), p);
  Put2(static_cast<int>(civil.year % 100), p + 2);
  p += 4;
  *p++ = ' ';
  Put2(static_cast<int>(seconds / 3600), p);
  p[2] = ':';
  Put2(static_cast<int>(seconds / 60 % 60), p + 3);
  p[5] = ':';
  Put2(static_cast<int>(seconds % 60), p + 6);
  p += 8;
  constexpr std::string_view kGmt = " GMT";
  p = std::copy(kGmt.begin(), kGmt.end(), p);
  return static_cast<size_t>(p - out);
}

bool ParseHttpDate(std::string_view text, int64_t* unix_seconds) {
  return ParseDate(text, nullptr, unix_seconds);
}

bool ParseHttpDateAt(std::string_view text, int64_t now_unix_seconds, int64_t* unix_seconds) {
  return ParseDate(text, &now_unix_seconds, unix_seconds);
}

}  // namespace uring_http::http
