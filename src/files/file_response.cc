#include "src/files/file_response.h"

namespace uring_http::files {

FilePlan PlanFileResponse(const FileRequestFields& request, const FileVersion& version,
                          EtagVariant variant) {
  FilePlan plan;
  char* tag = plan.etag;
  if (variant.weak) {
    tag[0] = 'W';
    tag[1] = '/';
    tag += 2;
  }
  size_t n = FormatStrongEtag(version, tag);
  if (!variant.suffix.empty() && variant.suffix.size() <= 12) {
    // Inside the closing quote.
    --n;
    for (char c : variant.suffix) tag[n++] = c;
    tag[n++] = '"';
  }
  plan.etag_len = static_cast<size_t>(tag - plan.etag) + n;
  FormatHttpDate(version.mtime_sec, plan.last_modified);
  ConditionalHeaders conditions;
  conditions.if_match = request.if_match;
  conditions.if_none_match = request.if_none_match;
  conditions.if_modified_since = request.if_modified_since;
  conditions.if_unmodified_since = request.if_unmodified_since;
  conditions.get_or_head = true;
  switch (Evaluate(conditions, plan.etag_view(), version.mtime_sec)) {
    case Precondition::kNotModified:
      plan.status = 304;
      return plan;
    case Precondition::kFailed:
      plan.status = 412;
      return plan;
    case Precondition::kNone:
      break;
  }
  plan.status = 200;
  plan.offset = 0;
  plan.length = version.size;
  // Range applies to GET only (RFC 9110 14.2: a server ignores it for other
  // methods, HEAD included), and only while If-Range agrees.
  if (request.head || request.range.empty() ||
      !IfRangeAllows(request.if_range, plan.etag_view(), version.mtime_sec)) {
    return plan;
  }
  ByteRange range;
  switch (ParseRange(request.range, version.size, &range)) {
    case RangeResult::kNone:
      break;
    case RangeResult::kSingle:
      plan.status = 206;
      plan.offset = range.first;
      plan.length = range.length();
      plan.content_range_len = FormatContentRange(&range, version.size, plan.content_range);
      break;
    case RangeResult::kUnsatisfiable:
      plan.status = 416;
      plan.length = 0;
      plan.content_range_len = FormatContentRange(nullptr, version.size, plan.content_range);
      break;
  }
  return plan;
}

}  // namespace uring_http::files
