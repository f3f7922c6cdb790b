// A strict JSON reader for one line of a result file, in one pass, building
// nothing: the row parser (jsonl_cells.cpp) takes the few values a verdict
// reads as they go by, and every other value is only checked.
//
// Why not a DOM parser: a gate reads a dozen of a row's ~45 fields, yet a DOM
// parser converts every number and writes every value before any is looked
// at. Here strings, most of a row's bytes, are scanned 16 bytes a step, and
// numbers no verdict reads are checked for their grammar only.
//
// Strict means RFC 8259 and no more, and never more lenient than Python's
// `json` module and the DuckDB reader the gate falls back to: the reader
// refuses invalid UTF-8, control characters in strings, lone surrogate
// escapes, numbers past a double's range (1e400, and 1e-400, which Python
// would read as 0.0), nesting past MAX_DEPTH and anything after the value. A refusal is never an error message: the caller
// gives the whole file to the slower readers, which word one.
//
// The line must be followed by a byte no rule accepts ('\n', or NUL after the
// last line of a file) and then at least PADDING readable bytes: every loop
// stops at that byte, so no step compares against the line's end, and a
// 16-byte load may run past it.

#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace strict_json {

constexpr size_t PADDING = 64;
// Deeper values are refused; result rows nest three levels.
constexpr int MAX_DEPTH = 64;
// Integers past 2**52 are refused where a value is read: a sum of two must
// stay exact in a double for a median to equal the reference reader's.
constexpr int64_t INT_LIMIT = int64_t{1} << 52;

// A string's bytes between its quotes, as they stand in the line.
struct Span {
  const char *begin = nullptr;
  const char *end = nullptr;
  bool escaped = false;  // holds a backslash escape: `decode` before reading
  std::string_view raw() const { return {begin, static_cast<size_t>(end - begin)}; }
};

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits as a code unit, or -1.
inline long hex4(const char *p) {
  long value = 0;
  for (int i = 0; i < 4; ++i) {
    int digit = hex_value(p[i]);
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// The length of the well-formed UTF-8 sequence at `p` (first byte >= 0x80),
// or 0: no overlong forms, no surrogates, nothing past U+10FFFF, which is
// what Python's strict UTF-8 decoder accepts.
inline size_t utf8_length(const char *text) {
  const auto *p = reinterpret_cast<const unsigned char *>(text);
  auto tail = [](unsigned char c) { return (c & 0xC0) == 0x80; };
  unsigned char c = p[0];
  if (c < 0xC2) return 0;
  if (c < 0xE0) return tail(p[1]) ? 2 : 0;
  if (c < 0xF0) {
    if (!tail(p[1]) || !tail(p[2])) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (c < 0xF5) {
    if (!tail(p[1]) || !tail(p[2]) || !tail(p[3])) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// The escape at `p` (a backslash), checked; `p` moves past it. A high
// surrogate must be followed by a low one: Python would read a lone one into
// a string no UTF-8 can hold, so lines with them are the slow readers'.
inline bool skip_escape(const char *&p) {
  switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
      p += 2;
      return true;
    case 'u': {
      long unit = hex4(p + 2);
      if (unit < 0) return false;
      p += 6;
      if (unit >= 0xDC00 && unit <= 0xDFFF) return false;
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        if (p[0] != '\\' || p[1] != 'u') return false;
        long low = hex4(p + 2);
        if (low < 0xDC00 || low > 0xDFFF) return false;
        p += 6;
      }
      return true;
    }
    default:
      return false;
  }
}

inline void append_utf8(std::string &out, unsigned long code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// An escaped string's text as UTF-8, in `scratch`.
[[gnu::noinline]] inline std::string_view decode_escaped(const Span &span, std::string &scratch) {
  scratch.clear();
  for (const char *p = span.begin; p < span.end;) {
    if (*p != '\\') {
      scratch += *p++;
      continue;
    }
    char kind = p[1];
    p += 2;
    switch (kind) {
      case 'b': scratch += '\b'; break;
      case 'f': scratch += '\f'; break;
      case 'n': scratch += '\n'; break;
      case 'r': scratch += '\r'; break;
      case 't': scratch += '\t'; break;
      case 'u': {
        unsigned long code = static_cast<unsigned long>(hex4(p));
        p += 4;
        if (code >= 0xD800 && code <= 0xDBFF) {  // a pair, checked when scanned
          unsigned long low = static_cast<unsigned long>(hex4(p + 2));
          p += 6;
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(scratch, code);
        break;
      }
      default: scratch += kind;  // '"', '\\' and '/' stand for themselves
    }
  }
  return scratch;
}

// A string's text as UTF-8; only for spans `Reader::string` accepted.
inline std::string_view decode(const Span &span, std::string &scratch) {
  return span.escaped ? decode_escaped(span, scratch) : span.raw();
}

// A number's value where a verdict reads it: finite, and an integer only up to
// INT_LIMIT. `integer`: the literal has no fraction or exponent.
inline bool number_value(const Span &span, bool integer, double *out) {
  if (integer) {
    const char *p = span.begin;
    bool negative = *p == '-';
    if (negative) ++p;
    if (span.end - p > 16) return false;  // 17 digits are past 2**52
    int64_t value = 0;
    for (; p < span.end; ++p) value = value * 10 + (*p - '0');
    if (value > INT_LIMIT) return false;
    *out = static_cast<double>(negative ? -value : value);
    return true;
  }
  double value = 0;
  auto [end, error] = std::from_chars(span.begin, span.end, value);
  if (error != std::errc() || end != span.end || !std::isfinite(value)) return false;
  *out = value;
  return true;
}

class Reader {
 public:
  Reader(const char *begin, const char *end) : p_(begin), end_(end) {}

  // JSON's whitespace; the line's own end ('\n') is never inside it.
  void skip_space() {
    while (*p_ == ' ' || *p_ == '\t' || *p_ == '\r') ++p_;
  }
  // The next byte after whitespace: which kind of value comes.
  char next() {
    skip_space();
    return *p_;
  }
  const char *here() const { return p_; }
  // Only whitespace left: the line held one value.
  bool at_end() {
    skip_space();
    return p_ == end_;
  }

  bool literal(std::string_view word) {
    if (std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  // The string at the reader (its opening quote), checked in full.
  bool string(Span &out) {
    if (*p_ != '"') return false;
    const char *p = p_ + 1;
    out.begin = p;
    out.escaped = false;
#if defined(__SSE2__)
    // Most strings of a row are keys shorter than 16 bytes: settled here,
    // inline; the rest go on in `string_rest`.
    unsigned mask = stops(p);
    if (mask != 0 && p[__builtin_ctz(mask)] == '"') {
      out.end = p + __builtin_ctz(mask);
      p_ = out.end + 1;
      return true;
    }
#endif
    return string_rest(p, out);
  }

 private:
#if defined(__SSE2__)
  // Bit i set: byte i of the 16 at `p` is a quote, a backslash, a control
  // byte or (a signed compare) any byte >= 0x80.
  static unsigned stops(const char *p) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    const __m128i stop = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')),
                     _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'))),
        _mm_cmplt_epi8(block, _mm_set1_epi8(0x20)));
    return static_cast<unsigned>(_mm_movemask_epi8(stop));
  }
#endif

  [[gnu::noinline]] bool string_rest(const char *p, Span &out) {
    for (;;) {
#if defined(__SSE2__)
      for (unsigned mask = stops(p);; mask = stops(p)) {
        if (mask != 0) {
          p += __builtin_ctz(mask);
          break;
        }
        p += 16;
      }
#else
      while (static_cast<unsigned char>(*p) >= 0x20 && static_cast<unsigned char>(*p) < 0x80 &&
             *p != '"' && *p != '\\')
        ++p;
#endif
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == '"') {
        out.end = p;
        p_ = p + 1;
        return true;
      }
      if (c == '\\') {
        if (!skip_escape(p)) return false;
        out.escaped = true;
        continue;
      }
      if (c < 0x20) return false;  // a control byte, or the line's end
      size_t length = utf8_length(p);
      if (length == 0) return false;
      p += length;
    }
  }

 public:
  // The number at the reader, by JSON's grammar; `integer` when it has
  // neither fraction nor exponent.
  bool number(Span &out, bool &integer) {
    const char *p = p_;
    out.begin = p;
    out.escaped = false;
    if (*p == '-') ++p;
    if (*p == '0') {
      ++p;
    } else if (*p >= '1' && *p <= '9') {
      while (is_digit(*p)) ++p;
    } else {
      return false;
    }
    integer = true;
    if (*p == '.') {
      ++p;
      if (!is_digit(*p)) return false;
      while (is_digit(*p)) ++p;
      integer = false;
    }
    if (*p == 'e' || *p == 'E') {
      ++p;
      if (*p == '+' || *p == '-') ++p;
      if (!is_digit(*p)) return false;
      while (is_digit(*p)) ++p;
      integer = false;
    }
    out.end = p;
    p_ = p;
    return true;
  }

  // An object at the reader: `member(key)` reads each value (the reader is
  // at it) and says whether it was acceptable.
  template <typename Member>
  bool object(int depth, Member &&member) {
    if (*p_ != '{' || depth > MAX_DEPTH) return false;
    ++p_;
    if (next() == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      Span key;
      if (!string(key)) return false;
      if (next() != ':') return false;
      ++p_;
      skip_space();
      if (!member(key)) return false;
      char c = next();
      ++p_;
      if (c == '}') return true;
      if (c != ',') return false;
      skip_space();
    }
  }

  template <typename Item>
  bool array(int depth, Item &&item) {
    if (*p_ != '[' || depth > MAX_DEPTH) return false;
    ++p_;
    if (next() == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      if (!item()) return false;
      char c = next();
      ++p_;
      if (c == ']') return true;
      if (c != ',') return false;
      skip_space();
    }
  }

  // Any value at the reader, checked and passed over. A number is refused
  // only when it is past a double's range.
  bool skip(int depth) {
    switch (*p_) {
      case '"': {
        Span ignored;
        return string(ignored);
      }
      case '{':
        return object(depth + 1, [&](const Span &) { return skip(depth + 1); });
      case '[':
        return array(depth + 1, [&] {
          skip_space();
          return skip(depth + 1);
        });
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: {
        Span span;
        bool integer = false;
        if (!number(span, integer)) return false;
        if (integer && span.end - span.begin < 300) return true;
        double value = 0;
        auto [end, error] = std::from_chars(span.begin, span.end, value);
        return error == std::errc() && end == span.end && std::isfinite(value);
      }
    }
  }

 private:
  const char *p_;
  const char *end_;
};

}  // namespace strict_json
