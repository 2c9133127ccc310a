// The multipart/form-data parser driven event by event: every example is
// fed whole, in every split in two, in every split in three (short ones) and
// byte by byte, and each feeding must tell the same story: the RFC 2046 and
// RFC 7578 examples, delimiters and their look-alikes inside data, preamble
// and epilogue, padding, malformed boundary lines and headers, quoted names,
// filename*, every limit at its edge, and the Content-Type's boundary.
#include "src/http/multipart.h"

#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "src/http/multipart_fields.h"

namespace uring_http::http {
namespace {

using Event = MultipartParser::Event;

// What a feeding saw, in a form two feedings can be compared by:
// "[part name|filename|type]" (filename "-" when none), the body bytes,
// "[end]", then "[done]" or "[error STATUS message]".
std::string Run(std::string_view boundary, const std::vector<std::string_view>& pieces,
                const MultipartLimits& limits = {}) {
  MultipartParser parser(boundary, limits);
  std::string out;
  auto error = [&] {
    return "[error " + std::to_string(parser.error_status()) + " " + parser.error_message() + "]";
  };
  for (std::string_view in : pieces) {
    while (true) {
      const MultipartParser::Result r = parser.Parse(in);
      EXPECT_LE(r.consumed, in.size());
      switch (r.event) {
        case Event::kPartBegin: {
          const MultipartPart& p = parser.part();
          out += "[part " + std::string(p.name) + "|" +
                 (p.has_filename ? std::string(p.filename) : "-") + "|" +
                 std::string(p.content_type) + "]";
          break;
        }
        case Event::kData:
          EXPECT_FALSE(r.data.empty());
          out += r.data;
          break;
        case Event::kPartEnd:
          out += "[end]";
          break;
        case Event::kError:
          return out + error();
        case Event::kNeedMore:
        case Event::kDone:
          EXPECT_EQ(r.consumed, in.size());
          break;
      }
      in.remove_prefix(r.consumed);
      if (r.event == Event::kNeedMore || r.event == Event::kDone) break;
    }
  }
  if (!parser.Finish()) return out + error();
  return out + "[done]";
}

// Runs `body` whole, then every other way, and expects the same story each
// time; returns it.
std::string RunEverySplit(std::string_view boundary, std::string_view body,
                          const MultipartLimits& limits = {}) {
  const std::string whole = Run(boundary, {body}, limits);
  for (size_t i = 0; i <= body.size(); ++i) {
    EXPECT_EQ(Run(boundary, {body.substr(0, i), body.substr(i)}, limits), whole)
        << "split at " << i;
  }
  if (body.size() <= 160) {
    for (size_t i = 0; i <= body.size(); ++i) {
      for (size_t j = i; j <= body.size(); ++j) {
        const std::string got = Run(
            boundary, {body.substr(0, i), body.substr(i, j - i), body.substr(j)}, limits);
        if (got != whole) {
          ADD_FAILURE() << "splits at " << i << ", " << j << ":\n" << got << "\n" << whole;
          return whole;
        }
      }
    }
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < body.size(); ++i) bytes.push_back(body.substr(i, 1));
  EXPECT_EQ(Run(boundary, bytes, limits), whole) << "byte by byte";
  return whole;
}

// RFC 2046 5.1.1's example: preamble, a part with no header lines, a part
// whose body ends in a line break, the close delimiter, an epilogue; a
// boundary with a space (quoted in its Content-Type).
TEST(MultipartParserTest, Rfc2046Example) {
  const std::string body =
      "This is the preamble.  It is to be ignored, though it\r\n"
      "is a handy place for composition agents to include an\r\n"
      "explanatory note to non-MIME conformant readers.\r\n"
      "\r\n"
      "--simple boundary\r\n"
      "\r\n"
      "This is implicitly typed plain US-ASCII text.\r\n"
      "It does NOT end with a linebreak.\r\n"
      "--simple boundary\r\n"
      "Content-type: text/plain; charset=us-ascii\r\n"
      "\r\n"
      "This is explicitly typed plain US-ASCII text.\r\n"
      "It DOES end with a linebreak.\r\n"
      "\r\n"
      "--simple boundary--\r\n"
      "\r\n"
      "This is the epilogue.  It is also to be ignored.\r\n";
  EXPECT_EQ(RunEverySplit("simple boundary", body),
            "[part |-|]This is implicitly typed plain US-ASCII text.\r\n"
            "It does NOT end with a linebreak.[end]"
            "[part |-|text/plain; charset=us-ascii]This is explicitly typed plain US-ASCII "
            "text.\r\nIt DOES end with a linebreak.\r\n[end][done]");
  const MultipartContentType type =
      ParseMultipartContentType("multipart/form-data; boundary=\"simple boundary\"");
  ASSERT_TRUE(type.ok()) << type.error;
  EXPECT_EQ(type.boundary, "simple boundary");
}

// RFC 7578 4.4's example and the shape browsers and curl send: a field and
// files, names quoted, the last part's body ending right at the delimiter.
TEST(MultipartParserTest, Rfc7578FieldsAndFiles) {
  const std::string body =
      "--AaB03x\r\n"
      "content-disposition: form-data; name=\"field1\"\r\n"
      "content-type: text/plain;charset=UTF-8\r\n"
      "content-transfer-encoding: quoted-printable\r\n"
      "\r\n"
      "Joe owes =E2=82=AC100.\r\n"
      "--AaB03x\r\n"
      "Content-Disposition: form-data; name=\"pics\"; filename=\"file1.txt\"\r\n"
      "Content-Type: text/plain\r\n"
      "\r\n"
      "...contents of file1.txt...\r\n"
      "--AaB03x\r\n"
      "Content-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n"
      "Content-Type: application/octet-stream\r\n"
      "\r\n"
      "\r\n"
      "--AaB03x--";
  EXPECT_EQ(RunEverySplit("AaB03x", body),
            "[part field1|-|text/plain;charset=UTF-8]Joe owes =E2=82=AC100.[end]"
            "[part pics|file1.txt|text/plain]...contents of file1.txt...[end]"
            "[part empty||application/octet-stream][end][done]");
}

// Bytes that begin like the delimiter are data unless the whole delimiter
// and one of SP, HTAB, CR, LF or "--" follow (Go's reading): CRs, CRLFs,
// "--AaB03" and "--AaB03xY" and "--AaB03x-" inside a part; a body that
// starts with what looks like a close delimiter without its CRLF.
TEST(MultipartParserTest, DelimiterLookalikesAreData) {
  const std::string data =
      "\r\r\n\r\n-\r\n--\r\n--A\r\n--AaB03\r\n--AaB03xY\r\n--AaB03x-\r\n--AaB03x-Z\r";
  const std::string body = "--AaB03x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" +
                           data + "\r\n--AaB03x--\r\n";
  EXPECT_EQ(RunEverySplit("AaB03x", body), "[part f|-|]" + data + "[end][done]");
}

TEST(MultipartParserTest, PaddingAfterDelimitersAndEmptyParts) {
  const std::string body =
      "preamble--AaB03x\r\nmore preamble\r\n--AaB03x \t \r\n"
      "\r\n"  // no header lines
      "\r\n--AaB03x\t\r\n"  // an empty body
      "Content-Disposition: form-data; name=a\r\n"
      "\r\n"
      "x\r\n"
      "--AaB03x--  \r\ntrailing";
  EXPECT_EQ(RunEverySplit("AaB03x", body), "[part |-|][end][part a|-|]x[end][done]");
  // No parts at all.
  EXPECT_EQ(RunEverySplit("AaB03x", "--AaB03x--"), "[done]");
}

TEST(MultipartParserTest, MissingCloseDelimiterIs400) {
  const std::string head = "--b\r\nContent-Disposition: form-data; name=a\r\n\r\n";
  const char* kCut = "[error 400 multipart body ended before its closing boundary]";
  EXPECT_EQ(RunEverySplit("b", head + "value"), "[part a|-|]value" + std::string(kCut));
  EXPECT_EQ(RunEverySplit("b", head + "value\r\n--b"), "[part a|-|]value" + std::string(kCut));
  EXPECT_EQ(RunEverySplit("b", head + "value\r\n--b-"), "[part a|-|]value" + std::string(kCut));
  EXPECT_EQ(RunEverySplit("b", head + "value\r\n--b\r\n"), "[part a|-|]value[end]" +
                                                                std::string(kCut));
  EXPECT_EQ(RunEverySplit("b", "--b\r\nContent-Disp"), kCut);
  EXPECT_EQ(RunEverySplit("b", ""), "[error 400 no multipart boundary line in the body]");
  EXPECT_EQ(RunEverySplit("b", "no delimiter here\r\n--c--"),
            "[error 400 no multipart boundary line in the body]");
}

TEST(MultipartParserTest, MalformedBoundaryLines) {
  EXPECT_EQ(RunEverySplit("b", "--b junk\r\n\r\n--b--"),
            "[error 400 unexpected bytes after a multipart boundary]");
  EXPECT_EQ(RunEverySplit("b", "--b\n\r\n--b--"),
            "[error 400 multipart boundary line ends in a bare LF]");
  EXPECT_EQ(RunEverySplit("b", "--b\r\r\n--b--"),
            "[error 400 multipart boundary line has a bare CR]");
  EXPECT_EQ(RunEverySplit("b", "--b\r\n\r\nx\r\n--b\nx"),
            "[part |-|]x[end][error 400 multipart boundary line ends in a bare LF]");
}

TEST(MultipartParserTest, MalformedPartHeaders) {
  auto run = [](std::string_view headers) {
    return RunEverySplit("b", "--b\r\n" + std::string(headers) + "\r\nx\r\n--b--");
  };
  EXPECT_EQ(run("No-Colon\r\n"), "[error 400 malformed part header name]");
  EXPECT_EQ(run("Name : v\r\n"), "[error 400 malformed part header name]");
  EXPECT_EQ(run(" folded\r\n"), "[error 400 obsolete line folding in a part header]");
  EXPECT_EQ(run("A: b\r\n c\r\n"), "[error 400 obsolete line folding in a part header]");
  EXPECT_EQ(run("A: b\rc\r\n"), "[error 400 bare CR in a part header]");
  EXPECT_EQ(run("A: b\nC: d\r\n"), "[error 400 invalid byte in a part header value]");
  EXPECT_EQ(run(std::string("A: b\0c\r\n", 8)), "[error 400 invalid byte in a part header value]");
  EXPECT_EQ(run("@: b\r\n"), "[error 400 malformed part header line]");
  EXPECT_EQ(run("Content-Disposition: form-data; name=\"open\r\n"),
            "[error 400 malformed Content-Disposition in a part]");
  EXPECT_EQ(run("Content-Disposition: form-data; name=a; name=b\r\n"),
            "[error 400 a Content-Disposition parameter given twice in a part]");
  EXPECT_EQ(run("Content-Disposition: form-data; name = a\r\n"),
            "[error 400 malformed Content-Disposition in a part]");
  EXPECT_EQ(run("Content-Disposition: form-data\r\nContent-Disposition: form-data\r\n"),
            "[error 400 two Content-Disposition headers in a part]");
  EXPECT_EQ(run("Content-Type: a/b\r\nContent-type: c/d\r\n"),
            "[error 400 two Content-Type headers in a part]");
  // What is tolerated: raw UTF-8, a trailing ';', another disposition type
  // (nameless then), unknown headers, any case.
  EXPECT_EQ(run("content-DISPOSITION: Form-Data; NAME=\"caf\xc3\xa9\"; x=y;\r\nX-Other: 1\r\n"),
            "[part caf\xc3\xa9|-|]x[end][done]");
  EXPECT_EQ(run("Content-Disposition: attachment; name=a; filename=f\r\n"),
            "[part |f|]x[end][done]");
}

TEST(MultipartParserTest, QuotedNamesAndFilenames) {
  auto part = [](std::string_view disposition) {
    return RunEverySplit("b", "--b\r\nContent-Disposition: " + std::string(disposition) +
                                  "\r\n\r\nx\r\n--b--");
  };
  EXPECT_EQ(part(R"(form-data; name="a\"b"; filename="q\\\"uote")"),
            "[part a\"b|q\\\"uote|]x[end][done]");
  // A backslash before anything else is itself: Windows paths survive.
  EXPECT_EQ(part(R"(form-data; name="f"; filename="C:\dir\a.txt")"),
            "[part f|C:\\dir\\a.txt|]x[end][done]");
  EXPECT_EQ(part(R"(form-data; name="semi;colon=x"; filename="../../etc/passwd")"),
            "[part semi;colon=x|../../etc/passwd|]x[end][done]");
  EXPECT_EQ(part("form-data; name=\"\"; filename=\"\""), "[part ||]x[end][done]");
  // A browser's encoding of '"' and newlines in names stays as it came.
  EXPECT_EQ(part("form-data; name=\"a%22b%0D%0A\""), "[part a%22b%0D%0A|-|]x[end][done]");
}

TEST(MultipartParserTest, FilenameStarWinsWhenDecodable) {
  auto part = [](std::string_view disposition) {
    return RunEverySplit("b", "--b\r\nContent-Disposition: " + std::string(disposition) +
                                  "\r\n\r\nx\r\n--b--");
  };
  EXPECT_EQ(part("form-data; name=f; filename=\"plain.txt\"; "
                 "filename*=UTF-8''na%C3%AFve%20%E2%82%AC.txt"),
            "[part f|na\xc3\xafve \xe2\x82\xac.txt|]x[end][done]");
  EXPECT_EQ(part("form-data; name=f; filename*=iso-8859-1'en'%E9t%E9.txt"),
            "[part f|\xc3\xa9t\xc3\xa9.txt|]x[end][done]");
  // Unknown charset, a bad escape, a byte outside attr-char: ignored.
  EXPECT_EQ(part("form-data; name=f; filename=a.txt; filename*=KOI8-R''%E9"),
            "[part f|a.txt|]x[end][done]");
  EXPECT_EQ(part("form-data; name=f; filename=a.txt; filename*=UTF-8''%G1"),
            "[part f|a.txt|]x[end][done]");
  EXPECT_EQ(part("form-data; name=f; filename*=UTF-8'x"), "[part f|-|]x[end][done]");
  EXPECT_EQ(part("form-data; name=f; filename=a; filename*=UTF-8''b; filename*=UTF-8''c"),
            "[error 400 a Content-Disposition parameter given twice in a part]");
}

TEST(MultipartParserTest, LimitsAtTheirEdges) {
  const std::string part = "--b\r\nContent-Disposition: form-data; name=a\r\n\r\n0123456789";
  const std::string body = part + "\r\n" + part + "\r\n--b--";
  MultipartLimits limits;
  limits.max_parts = 2;
  EXPECT_EQ(RunEverySplit("b", body, limits).substr(0, 6), "[part ");
  EXPECT_EQ(RunEverySplit("b", body, limits).find("error"), std::string::npos);
  limits.max_parts = 1;
  EXPECT_EQ(RunEverySplit("b", body, limits),
            "[part a|-|]0123456789[end][error 413 more multipart parts than max_parts]");

  limits = {};
  limits.max_part_bytes = 10;
  EXPECT_EQ(RunEverySplit("b", body, limits).find("error"), std::string::npos);
  limits.max_part_bytes = 9;
  const std::string over = RunEverySplit("b", body, limits);
  EXPECT_NE(over.find("[error 413 multipart part over max_part_bytes]"), std::string::npos)
      << over;

  // The header section: "Content-Disposition: form-data; name=a\r\n\r\n" is 42 bytes.
  limits = {};
  limits.max_header_bytes = 42;
  EXPECT_EQ(RunEverySplit("b", body, limits).find("error"), std::string::npos);
  limits.max_header_bytes = 41;
  EXPECT_EQ(RunEverySplit("b", body, limits),
            "[error 413 multipart part's header section over max_header_bytes]");
  // Padding after a delimiter counts too.
  limits.max_header_bytes = 4;
  EXPECT_EQ(RunEverySplit("b", "--b      \r\n\r\n--b--", limits),
            "[error 413 multipart boundary line over max_header_bytes]");

  limits = {};
  limits.max_total_bytes = body.size();
  EXPECT_EQ(RunEverySplit("b", body, limits).find("error"), std::string::npos);
  EXPECT_NE(RunEverySplit("b", body + "epilogue", limits)
                .find("[error 413 multipart body over max_total_bytes]"),
            std::string::npos);
  limits.max_total_bytes = body.size() - 1;
  EXPECT_NE(RunEverySplit("b", body, limits).find("[error 413 multipart body over max_total_bytes]"),
            std::string::npos);
}

// Whole input: every piece of a part's body is a view into it, and one
// part's pieces are contiguous (MultipartForm relies on it).
TEST(MultipartParserTest, DataViewsTheInput) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=a\r\n\r\n"
      "one\r\n--bX two\r\r\n three\r\n--b--";
  MultipartParser parser("b");
  std::string_view in = body;
  const char* end_of_last = nullptr;
  int pieces = 0;
  while (true) {
    const auto r = parser.Parse(in);
    if (r.event == Event::kData) {
      EXPECT_GE(r.data.data(), body.data());
      EXPECT_LE(r.data.data() + r.data.size(), body.data() + body.size());
      if (end_of_last != nullptr) EXPECT_EQ(r.data.data(), end_of_last);
      end_of_last = r.data.data() + r.data.size();
      ++pieces;
    }
    in.remove_prefix(r.consumed);
    if (r.event == Event::kDone || r.event == Event::kError || r.event == Event::kNeedMore) break;
  }
  EXPECT_TRUE(parser.Finish());
  EXPECT_EQ(pieces, 1);
}

TEST(MultipartParserTest, HeadersAndIndex) {
  const std::string body =
      "--b\r\nContent-Disposition: form-data; name=a\r\nX-Note:  hi there \r\n\r\nx\r\n"
      "--b\r\nContent-Disposition: form-data; name=c\r\n\r\ny\r\n--b--";
  MultipartParser parser("b");
  std::string_view in = body;
  std::vector<size_t> indexes;
  while (true) {
    const auto r = parser.Parse(in);
    if (r.event == Event::kPartBegin) {
      indexes.push_back(parser.part().index);
      if (parser.part().name == "a") {
        EXPECT_EQ(parser.part().FindHeader("x-note"), "hi there");
        EXPECT_EQ(parser.part().FindHeader("content-disposition"), "form-data; name=a");
        EXPECT_EQ(parser.part().FindHeader("absent"), "");
      }
    }
    in.remove_prefix(r.consumed);
    if (r.event == Event::kDone || r.event == Event::kError || r.event == Event::kNeedMore) break;
  }
  EXPECT_EQ(indexes, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(parser.parts(), 2u);
}

TEST(MultipartParserTest, ErrorsStayAndSayWhere) {
  MultipartParser parser("b");
  const std::string body = "--b\r\nA: b\rX";
  const auto r = parser.Parse(body);
  EXPECT_EQ(r.event, Event::kError);
  EXPECT_EQ(parser.error_offset(), 10u);  // the X after the bare CR
  EXPECT_EQ(parser.Parse("more").event, Event::kError);
  EXPECT_FALSE(parser.Finish());
  EXPECT_EQ(parser.error_status(), 400);

  MultipartParser bad("bad\x01");
  EXPECT_TRUE(bad.failed());
  EXPECT_EQ(bad.error_status(), 400);
  // Reset reuses a parser for another body.
  bad.Reset("ok");
  EXPECT_FALSE(bad.failed());
  EXPECT_EQ(bad.Parse("--ok--").event, Event::kDone);
  EXPECT_TRUE(bad.Finish());
}

TEST(MultipartContentTypeTest, Boundary) {
  auto boundary = [](std::string_view ct) {
    const MultipartContentType t = ParseMultipartContentType(ct);
    return t.ok() ? t.boundary : std::to_string(t.error_status) + " " + t.error;
  };
  EXPECT_EQ(boundary("multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW"),
            "----WebKitFormBoundary7MA4YWxkTrZu0gW");
  EXPECT_EQ(boundary("Multipart/Form-Data;BOUNDARY=\"a:b=c?\" ; charset=utf-8"), "a:b=c?");
  EXPECT_EQ(boundary("  multipart/form-data ; boundary=x  "), "x");
  EXPECT_EQ(boundary("multipart/form-data; boundary=x;"), "x");
  EXPECT_EQ(boundary("multipart/mixed; boundary=x"), "415 Content-Type is not multipart/form-data");
  EXPECT_EQ(boundary("application/json"), "415 Content-Type is not multipart/form-data");
  EXPECT_EQ(boundary(""), "415 Content-Type is not multipart/form-data");
  EXPECT_EQ(boundary("multipart/form-dataX; boundary=x"),
            "415 Content-Type is not multipart/form-data");
  EXPECT_EQ(boundary("multipart/form-data"),
            "400 no boundary parameter in a multipart/form-data Content-Type");
  EXPECT_EQ(boundary("multipart/form-data; boundary=a; boundary=b"),
            "400 two boundary parameters in Content-Type");
  EXPECT_EQ(boundary("multipart/form-data; boundary="), "400 malformed Content-Type parameters");
  EXPECT_EQ(boundary("multipart/form-data; boundary=\"\""),
            "400 invalid multipart boundary in Content-Type");
  EXPECT_EQ(boundary("multipart/form-data; boundary=\"ends in space \""),
            "400 invalid multipart boundary in Content-Type");
  EXPECT_EQ(boundary("multipart/form-data; boundary=" + std::string(70, 'x')),
            std::string(70, 'x'));
  EXPECT_EQ(boundary("multipart/form-data; boundary=" + std::string(71, 'x')),
            "400 invalid multipart boundary in Content-Type");
  EXPECT_EQ(boundary("multipart/form-data; boundary=\"a*b\""),
            "400 invalid multipart boundary in Content-Type");
}

}  // namespace
}  // namespace uring_http::http
