// The gate's cells straight from JSON Lines result files, in native code.
//
// Why this exists: `capeval gate` on two 200,000-row files spends nearly all
// its time parsing JSON. DuckDB's reader builds every row's columns through
// a general pipeline; here each line is validated in full by a strict
// one-pass reader (strict_json.h) that builds nothing, only the fields the
// verdicts read are taken as they go by, and the cells are aggregated in the
// same pass, one file range per core with the GIL released.
//
// It is a fast path only, stricter than the DuckDB one: anything it is not
// sure of (a malformed line, a wrong type, a duplicated field, a legacy row,
// rows of one cell that disagree about their id or bait) makes `scan` raise
// `Unavailable`, and the caller reads the files the DuckDB way, which in
// turn gives way to the reference reader that names file and line. So this
// code never has to word an error, only to refuse what it cannot judge.

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "strict_json.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

constexpr uint32_t NONE = UINT32_MAX;  // a null or absent string
constexpr int MAX_METRICS = 32;

PyObject *Unavailable = nullptr;

struct Options {
  std::vector<std::string> metrics;
  size_t legacy = 0;  // the index of taskToolCallCount in `metrics`
  bool headline = false;
  bool with_values = false;
};

struct Row {
  uint32_t key, id, provider, model, bait, tier, title;
  bool passed;
  double duration, turns, tokens;  // NaN: null or absent
  double m[MAX_METRICS];           // NaN: null or absent
};

// Strings of one chunk, numbered in order of first appearance.
struct Strings {
  std::vector<std::string> list;
  std::unordered_map<std::string, uint32_t> index;
  uint32_t intern(std::string_view text) {
    auto found = index.find(std::string(text));
    if (found != index.end()) return found->second;
    uint32_t id = static_cast<uint32_t>(list.size());
    list.emplace_back(text);
    index.emplace(list.back(), id);
    return id;
  }
};

// Equal texts; inline, where a call to memcmp costs more than these short keys.
inline bool same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// One field's last value, so runs of rows sharing a key skip the hash table.
struct Recent {
  std::string text;
  uint32_t id = NONE;
  uint32_t get(Strings &strings, std::string_view value) {
    if (id == NONE || !same(value, text)) {
      id = strings.intern(value);
      text.assign(value);
    }
    return id;
  }
};

// The k-th and (k+1)-th smallest (k from 0) of `values`, all integers in
// [low, low + span), counted rather than selected: most metrics are small
// counts, where this is several times faster than nth_element.
std::pair<double, double> counted(const std::vector<double> &values, double low, size_t span,
                                  size_t k) {
  std::vector<uint32_t> counts(span, 0);
  for (double v : values) ++counts[static_cast<size_t>(v - low)];
  size_t seen = 0, i = 0;
  while (seen + counts[i] <= k) seen += counts[i++];
  double first = low + static_cast<double>(i);
  if (seen + counts[i] > k + 1) return {first, first};
  ++i;
  while (counts[i] == 0) ++i;
  return {first, low + static_cast<double>(i)};
}

// The reference reader's median (capeval.aggregate.median); reorders `values`.
double median_of(std::vector<double> &values) {
  size_t n = values.size();
  if (n == 0) return NAN;
  constexpr double MAX_SPAN = 4096;
  double least = values[0], most = values[0];
  bool integral = true;
  for (double v : values) {
    least = std::min(least, v);
    most = std::max(most, v);
    // -0.0 counts as 0.0, yet the reference reader keeps its sign.
    integral = integral && v == std::floor(v) && !(v == 0 && std::signbit(v));
  }
  if (integral && most - least < MAX_SPAN && n >= 64) {
    auto [below, above] = counted(values, least, static_cast<size_t>(most - least) + 1, (n - 1) / 2);
    if (n % 2) return below;
    double total = below + above;
    return std::isfinite(total) ? total / 2 : below / 2 + above / 2;
  }
  auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (n % 2) return *mid;
  double low = *std::max_element(values.begin(), mid), high = *mid;
  double total = low + high;
  if (!std::isfinite(total)) return low / 2 + high / 2;
  return total / 2;
}

// One cell's facts so far: a chunk's (string ids local to it), then all of them.
struct Cell {
  int side = 0;
  uint32_t key = NONE;
  uint32_t id = NONE;
  long n = 0, passes = 0;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // distinct (provider, model)
  uint32_t bait = NONE;
  bool bait_conflict = false, id_conflict = false;
  uint32_t tier = NONE, title = NONE;  // the first row's, in file order
  double duration = 0, turns = 0, tokens = 0;
  long duration_n = 0, turns_n = 0, tokens_n = 0;
  std::vector<double> values[MAX_METRICS];
  std::vector<bool> pass_list;
  std::vector<const Cell *> parts;  // the chunks' cells, gathered by `finish`
  double medians[MAX_METRICS];

  // Fold in a chunk's part of this cell (chunks in file order); `map`
  // turns the other part's string ids into this one's.
  template <typename Map>
  void fold(const Cell &other, Map map) {
    uint32_t other_id = map(other.id);
    if (n == 0) {  // the cell's first row is in this part
      tier = map(other.tier);
      title = map(other.title);
    }
    if (id == NONE) id = other_id;
    if (id != other_id || other.id_conflict) id_conflict = true;
    n += other.n;
    passes += other.passes;
    for (const auto &pair : other.pairs) {
      std::pair<uint32_t, uint32_t> mine(map(pair.first), map(pair.second));
      if (std::find(pairs.begin(), pairs.end(), mine) == pairs.end()) pairs.push_back(mine);
    }
    if (other.bait != NONE) {
      uint32_t b = map(other.bait);
      if (bait == NONE) bait = b;
      if (bait != b) bait_conflict = true;
    }
    bait_conflict = bait_conflict || other.bait_conflict;
    duration += other.duration, duration_n += other.duration_n;
    turns += other.turns, turns_n += other.turns_n;
    tokens += other.tokens, tokens_n += other.tokens_n;
    parts.push_back(&other);
  }

  // Values of every part in one place, medians taken (values sorted when kept).
  void finish(size_t metrics, bool with_values) {
    for (size_t i = 0; i < metrics; ++i) {
      size_t total = 0;
      for (const Cell *part : parts) total += part->values[i].size();
      values[i].reserve(total);
      for (const Cell *part : parts)
        values[i].insert(values[i].end(), part->values[i].begin(), part->values[i].end());
      medians[i] = median_of(values[i]);
      if (with_values) std::sort(values[i].begin(), values[i].end());
      else std::vector<double>().swap(values[i]);
    }
    if (with_values)
      for (const Cell *part : parts)
        pass_list.insert(pass_list.end(), part->pass_list.begin(), part->pass_list.end());
  }

  // A row, its string ids already this cell's.
  void add(const Row &r, size_t metrics, bool with_values) {
    if (n == 0) {  // the reference reader's tier and title: the first row's
      tier = r.tier;
      title = r.title;
    }
    if (id == NONE) id = r.id;
    if (id != r.id) id_conflict = true;
    n += 1;
    passes += r.passed ? 1 : 0;
    std::pair<uint32_t, uint32_t> pair(r.provider, r.model);
    if (pairs.empty() || pairs.back() != pair) {
      if (std::find(pairs.begin(), pairs.end(), pair) == pairs.end()) pairs.push_back(pair);
    }
    if (r.bait != NONE) {
      if (bait == NONE) bait = r.bait;
      if (bait != r.bait) bait_conflict = true;
    }
    if (!std::isnan(r.duration)) duration += r.duration, duration_n += 1;
    if (!std::isnan(r.turns)) turns += r.turns, turns_n += 1;
    if (!std::isnan(r.tokens)) tokens += r.tokens, tokens_n += 1;
    for (size_t i = 0; i < metrics; ++i)
      if (!std::isnan(r.m[i])) values[i].push_back(r.m[i]);
    if (with_values) pass_list.push_back(r.passed);
  }
};

// Lines that start in [start, stop) of one file: the line running across
// `start` belongs to the chunk before, the one running across `stop` to this.
struct Chunk {
  int side = 0;
  int fd = -1;
  off_t start = 0, stop = 0, size = 0;  // `size`: the file's
  Strings strings;
  std::vector<Cell> cells;             // in order of first appearance
  std::vector<uint32_t> cell_of_key;  // local key string id -> index in cells

  void add(const Row &r, const Options &options) {
    if (r.key >= cell_of_key.size()) cell_of_key.resize(strings.list.size(), NONE);
    uint32_t &slot = cell_of_key[r.key];
    if (slot == NONE) {
      slot = static_cast<uint32_t>(cells.size());
      cells.emplace_back();
      cells.back().side = side;
      cells.back().key = r.key;
    }
    cells[slot].add(r, options.metrics.size(), options.with_values);
  }
};

// Bumped by `cancel()`: a scan that sees it move stops at its next block.
std::atomic<unsigned long> generation{0};

struct Failure {
  unsigned long started = 0;  // the generation the scan belongs to
  std::mutex lock;
  std::atomic<bool> failed{false};
  std::string reason;
  void set(const std::string &why) {
    std::lock_guard<std::mutex> guard(lock);
    if (!failed.load()) reason = why;
    failed.store(true);
  }
};

bool is_blank(const char *p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    char c = p[i];
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') return false;
  }
  return true;
}

using strict_json::Reader;
using strict_json::Span;

constexpr const char *INVALID = "a line that is not valid JSON";

class Parser {
 public:
  Parser(const Options &options, Chunk &chunk) : options_(options), chunk_(chunk) {}

  // Null when the line was read; otherwise why it cannot be judged here.
  // The line is followed by its '\n' (a NUL after a file's last line) and
  // strict_json::PADDING readable bytes.
  const char *line(const char *text, size_t size) {
    Row r;
    for (const Shape &shape : shapes_) {
      const char *why = nullptr;
      if (by_shape(shape, text, size, r, why)) return why != nullptr ? why : finish(r);
    }
    Reader in(text, text + size);
    if (in.next() != '{') return "a line that is not a JSON object";
    start(r);
    marks_.clear();
    learning_ = true;
    const char *why = nullptr;
    bool read = in.object(1, [&](const Span &name) {
      uint32_t field = classify(strict_json::decode(name, scratch_));
      const char *begin = in.here();
      size_t nested = marks_.size();
      why = value(in, field, r);
      // An object of behaviors or token counts left its members' marks instead.
      if (marks_.size() == nested) marks_.push_back({begin, in.here(), field});
      return why == nullptr;
    });
    learning_ = false;
    if (!read) return why != nullptr ? why : INVALID;
    if (!in.at_end()) return INVALID;
    why = finish(r);
    if (why == nullptr) learn(text, size);
    return why;
  }

 private:
  // A row's layout as one writer prints it: the bytes before each value
  // (comma, quoted key, colon, spaces; an object's brace and first key) with
  // the field that key names, then the bytes after the last value. Members
  // of behaviors and tokenUsage objects are values of their own. A line
  // whose bytes around its values are those of a shape learned from a row
  // read in full has the same keys in the same order, so it needs only its
  // values read: what a full read would accept and refuse, without scanning
  // the keys.
  struct Bytes {
    std::vector<char> data;  // padded: 16-byte loads may run past the end
    size_t size = 0;
    Bytes(const char *begin, const char *end)
        : data(static_cast<size_t>(end - begin) + 16, 0), size(static_cast<size_t>(end - begin)) {
      memcpy(data.data(), begin, size);
    }
  };
  struct Slot {
    Bytes before;
    uint32_t field;
  };
  struct Shape {
    std::vector<Slot> slots;
    std::vector<char> after;
  };
  struct Mark {
    const char *begin, *end;
    uint32_t field;
  };
  static constexpr size_t MAX_SHAPES = 4;
  static constexpr size_t MAX_SLOTS = 1024;
  // Fields of a shape's values inside behaviors and tokenUsage objects.
  static constexpr uint32_t NESTED = 1u << 20;                // a member no verdict reads
  static constexpr uint32_t METRIC = NESTED | (1u << 21);     // | the metric's index
  static constexpr uint32_t METRIC_INDEX = MAX_METRICS - 1;
  static constexpr uint32_t TOKEN_INPUT = NESTED | (1u << 22);

  // The `size` bytes at `line` (followed by readable padding) equal `known`.
  static bool same_bytes(const char *line, const Bytes &known) {
    size_t n = known.size;
#if defined(__SSE2__)
    auto equal16 = [](const char *a, const char *b) {
      __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
      __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b));
      return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)));
    };
    if (n <= 16) {
      unsigned want = (1u << n) - 1;
      return (equal16(line, known.data.data()) & want) == want;
    }
    if (n <= 32)
      return equal16(line, known.data.data()) == 0xFFFF &&
             equal16(line + n - 16, known.data.data() + n - 16) == 0xFFFF;
#endif
    return memcmp(line, known.data.data(), n) == 0;
  }

  // The line read by `shape`: false when its bytes around the values are not
  // the shape's (the caller then reads it in full); true with `why` set as
  // `line` would set it otherwise.
  bool by_shape(const Shape &shape, const char *text, size_t size, Row &r, const char *&why) {
    const char *p = text;
    const char *end = text + size;
    start(r);
    for (const Slot &slot : shape.slots) {
      if (static_cast<size_t>(end - p) < slot.before.size || !same_bytes(p, slot.before))
        return false;
      Reader in(p + slot.before.size, end);
      uint32_t field = slot.field;
      if (!(field & NESTED)) {
        why = value(in, field, r);
      } else if ((field & METRIC) == METRIC) {
        has_behaviors_ = true;
        why = number(in, &r.m[field & METRIC_INDEX], "a behavior metric that is not a finite number");
      } else if (field == TOKEN_INPUT) {
        why = number(in, &r.tokens, "a tokenUsage.input that is not a number");
      } else {
        why = in.skip(2) ? nullptr : INVALID;
      }
      if (why != nullptr) return true;
      p = in.here();
    }
    if (static_cast<size_t>(end - p) != shape.after.size() ||
        memcmp(p, shape.after.data(), shape.after.size()) != 0)
      return false;
    return true;
  }

  // Where a member of behaviors or tokenUsage lies, while a row is read in full.
  void mark(const char *begin, const char *end, uint32_t field) {
    if (learning_) marks_.push_back({begin, end, field});
  }

  void learn(const char *text, size_t size) {
    if (marks_.size() > MAX_SLOTS) return;  // rows this wide are read in full
    Shape shape;
    const char *p = text;
    for (const Mark &mark : marks_) {
      shape.slots.push_back({Bytes(p, mark.begin), mark.field});
      p = mark.end;
    }
    shape.after.assign(p, text + size);
    if (shapes_.size() == MAX_SHAPES) shapes_.erase(shapes_.begin());
    shapes_.push_back(std::move(shape));
  }

  void start(Row &r) {
    r.key = r.id = r.provider = r.model = r.bait = r.tier = r.title = NONE;
    r.passed = false;
    r.duration = r.turns = r.tokens = NAN;
    for (size_t i = 0; i < options_.metrics.size(); ++i) r.m[i] = NAN;
    seen_ = 0;
    has_behaviors_ = false;
  }

  // The checks of a whole row, once its members are read; null when it counts.
  const char *finish(const Row &r) {
    if (r.key == NONE || r.id == NONE) return "a row without resultKey or id";
    if (!(seen_ & F_PASSED)) return "a row without passed";
    // DuckDB's rule for a legacy row; those are the DuckDB path's to read.
    if (has_behaviors_ && std::isnan(r.m[options_.legacy])) return "a row that predates taskToolCallCount";
    chunk_.add(r, options_);
    return nullptr;
  }

  // Top-level fields, as bits of a row's `seen_`.
  static constexpr uint32_t F_KEY = 1u << 0;
  static constexpr uint32_t F_ID = 1u << 1;
  static constexpr uint32_t F_PROVIDER = 1u << 2;
  static constexpr uint32_t F_MODEL = 1u << 3;
  static constexpr uint32_t F_PASSED = 1u << 4;
  static constexpr uint32_t F_BAIT = 1u << 5;
  static constexpr uint32_t F_BEHAVIORS = 1u << 6;
  static constexpr uint32_t F_REPEAT = 1u << 7;
  static constexpr uint32_t F_TIER = 1u << 8;
  static constexpr uint32_t F_TITLE = 1u << 9;
  static constexpr uint32_t F_DURATION = 1u << 10;
  static constexpr uint32_t F_TURNS = 1u << 11;
  static constexpr uint32_t F_TOKENS = 1u << 12;

  // The field a top-level key names, 0 for the rest; by length first, since
  // a row holds about 45 keys and all but a dozen are skipped.
  static uint32_t classify(std::string_view name) {
    // A literal's size is known here, so each compare is inlined.
#define IS(literal) (memcmp(name.data(), literal, sizeof(literal) - 1) == 0)
    switch (name.size()) {
      case 2: return IS("id") ? F_ID : 0;
      case 4: return IS("bait") ? F_BAIT : IS("tier") ? F_TIER : 0;
      case 5: return IS("model") ? F_MODEL : IS("title") ? F_TITLE : 0;
      case 6: return IS("passed") ? F_PASSED : IS("repeat") ? F_REPEAT : 0;
      case 8: return IS("provider") ? F_PROVIDER : 0;
      case 9:
        return IS("resultKey") ? F_KEY : IS("behaviors") ? F_BEHAVIORS : IS("turnsUsed") ? F_TURNS : 0;
      case 10: return IS("tokenUsage") ? F_TOKENS : IS("durationMs") ? F_DURATION : 0;
      default: return 0;
    }
#undef IS
  }

  bool once(uint32_t field) {
    if (seen_ & field) return false;
    seen_ |= field;
    return true;
  }

  // One top-level member's value (the reader is at it), `field` its key's.
  const char *value(Reader &in, uint32_t field, Row &r) {
    if (field == 0 || (!options_.headline && (field & (F_TIER | F_TITLE | F_DURATION | F_TURNS))))
      return in.skip(1) ? nullptr : INVALID;  // most of a row: fields no verdict reads
    if (!once(field)) return "a field given twice";
    switch (field) {
      case F_KEY: return text(in, key_, r.key, false, "a row without a usable resultKey");
      case F_ID: return text(in, id_, r.id, false, "a row without a usable id");
      case F_PROVIDER: return text(in, provider_, r.provider, true, "a provider that is not a string");
      case F_MODEL: return text(in, model_, r.model, true, "a model that is not a string");
      case F_TIER: return text(in, tier_, r.tier, true, "a tier that is not a string");
      case F_TITLE: return text(in, title_, r.title, true, "a title that is not a string");
      case F_DURATION: return number(in, &r.duration, "a durationMs that is not a number");
      case F_TURNS: return number(in, &r.turns, "a turnsUsed that is not a number");
      case F_PASSED:
        if (in.next() == 't' && in.literal("true")) r.passed = true;
        else if (in.next() == 'f' && in.literal("false")) r.passed = false;
        else return "a passed that is not true or false";
        return nullptr;
      case F_REPEAT: {
        if (in.next() == 'n') return in.literal("null") ? nullptr : INVALID;
        Span span;
        bool integer = false;
        if (!in.number(span, integer) || !integer || span.end - span.begin > 18)
          return "a repeat that is not an integer";
        return nullptr;
      }
      case F_BAIT: {
        if (in.next() == 'n') return in.literal("null") ? nullptr : INVALID;
        // Its JSON text as written: rows of one cell must agree on it, and
        // the caller reads it with `json.loads`.
        const char *begin = in.here();
        if (!in.skip(1)) return INVALID;
        r.bait = bait_.get(chunk_.strings, std::string_view(begin, in.here() - begin));
        return nullptr;
      }
      case F_TOKENS: {
        if (in.next() == 'n') return in.literal("null") ? nullptr : INVALID;
        if (in.next() != '{') return "a tokenUsage that is not an object";
        bool seen_input = false;
        const char *why = nullptr;
        bool read = in.object(2, [&](const Span &key) {
          const char *begin = in.here();
          if (strict_json::decode(key, scratch_) != "input") {
            bool ok = in.skip(2);
            mark(begin, in.here(), NESTED);
            return ok;
          }
          why = seen_input ? "a tokenUsage.input given twice"
                           : number(in, &r.tokens, "a tokenUsage.input that is not a number");
          seen_input = true;
          mark(begin, in.here(), TOKEN_INPUT);
          return why == nullptr;
        });
        return read ? nullptr : why != nullptr ? why : INVALID;
      }
      case F_BEHAVIORS: {
        if (in.next() == 'n') return in.literal("null") ? nullptr : INVALID;
        if (in.next() != '{') return "behaviors that are not an object";
        has_behaviors_ = true;
        return behaviors(in, r);
      }
    }
    return INVALID;  // not reached: every field is a case above
  }

  // A string field (or null, when `nullable`); `out` gets its string id.
  const char *text(Reader &in, Recent &recent, uint32_t &out, bool nullable, const char *why) {
    char next = in.next();
    if (nullable && next == 'n') return in.literal("null") ? nullptr : INVALID;
    if (next != '"') return why;
    Span span;
    if (!in.string(span)) return INVALID;
    std::string_view value = strict_json::decode(span, scratch_);
    if (!nullable && value.empty()) return why;
    out = recent.get(chunk_.strings, value);
    return nullptr;
  }

  // A nullable number field: NaN for null; refused if a double would not
  // hold it as the reference reader does.
  static const char *number(Reader &in, double *out, const char *why) {
    char next = in.next();
    if (next == 'n') {
      *out = NAN;
      return in.literal("null") ? nullptr : INVALID;
    }
    if (next != '-' && !strict_json::is_digit(next)) return why;
    Span span;
    bool integer = false;
    if (!in.number(span, integer)) return INVALID;
    return strict_json::number_value(span, integer, out) ? nullptr : why;
  }

  const char *behaviors(Reader &in, Row &r) {
    uint64_t found = 0;
    size_t count = options_.metrics.size();
    size_t guess = 0;  // writers keep the metrics in one order: try the next one first
    const char *why = nullptr;
    bool read = in.object(2, [&](const Span &key) {
      std::string_view name = strict_json::decode(key, scratch_);
      const char *begin = in.here();
      for (size_t k = 0; k < count; ++k) {
        size_t i = (guess + k) % count;
        const std::string &metric = options_.metrics[i];
        if (!same(name, metric)) continue;
        if (found & (1ull << i)) {
          why = "a repeated behavior metric";
          return false;
        }
        found |= 1ull << i;
        guess = i + 1;
        why = number(in, &r.m[i], "a behavior metric that is not a finite number");
        mark(begin, in.here(), METRIC | static_cast<uint32_t>(i));
        return why == nullptr;
      }
      bool ok = in.skip(2);  // toolCallsByName and metrics no verdict reads
      mark(begin, in.here(), NESTED);
      return ok;
    });
    return read ? nullptr : why != nullptr ? why : INVALID;
  }

  const Options &options_;
  Chunk &chunk_;
  uint32_t seen_ = 0;
  bool has_behaviors_ = false;
  std::string scratch_;  // an escaped key or value, decoded
  std::vector<Shape> shapes_;  // the latest first-read rows' shapes, oldest first
  std::vector<Mark> marks_;    // where the values of the row read in full lie
  bool learning_ = false;      // reading a row in full: nested members leave marks
  Recent key_, id_, provider_, model_, bait_, tier_, title_;
};

// Read the chunk's lines with pread into `buffer` (reused, so its pages are
// touched once; a mapped file would count in full toward peak memory) and
// judge each one; blank lines are skipped, as the reference reader skips them.
void scan_chunk(const Options &options, Chunk &chunk, std::vector<char> &buffer,
                Failure &failure) {
  constexpr size_t BLOCK = 1 << 20;
  Parser parser(options, chunk);
  // From the byte before `start`: through its newline is the chunk before's.
  off_t base = chunk.start > 0 ? chunk.start - 1 : 0;  // file offset of buffer[0]
  off_t read_to = base;
  size_t have = 0;
  bool skip = chunk.start > 0;
  for (;;) {
    if (failure.failed.load(std::memory_order_relaxed)) return;
    if (generation.load(std::memory_order_relaxed) != failure.started) {
      failure.set("the scan was cancelled");
      return;
    }
    if (buffer.size() < have + BLOCK + strict_json::PADDING)
      buffer.resize(have + BLOCK + strict_json::PADDING);
    ssize_t got = 0;
    if (read_to < chunk.size) {
      do {
        got = pread(chunk.fd, buffer.data() + have, BLOCK, read_to);
      } while (got < 0 && errno == EINTR);
      if (got < 0) {
        failure.set("a file that cannot be read");
        return;
      }
    }
    read_to += got;
    have += static_cast<size_t>(got);
    // A file's last line may lack its newline: a NUL ends it for the reader.
    memset(buffer.data() + have, 0, strict_json::PADDING);
    bool eof = got == 0;
    char *p = buffer.data();
    char *end = p + have;
    for (;;) {
      char *nl = static_cast<char *>(memchr(p, '\n', static_cast<size_t>(end - p)));
      if (nl == nullptr) break;
      off_t offset = base + (p - buffer.data());
      if (skip) {
        skip = false;
      } else {
        if (offset >= chunk.stop) return;
        size_t size = static_cast<size_t>(nl - p);
        if (!is_blank(p, size)) {
          const char *why = parser.line(p, size);
          if (why != nullptr) {
            failure.set(why);
            return;
          }
        }
      }
      p = nl + 1;
    }
    size_t rest = static_cast<size_t>(end - p);
    off_t rest_offset = base + (p - buffer.data());
    if (eof) {
      // A last line without its newline: a complete row is read (as the
      // reference reader reads it), a torn one is invalid JSON and refused.
      if (!skip && rest_offset < chunk.stop && !is_blank(p, rest)) {
        const char *why = parser.line(p, rest);
        if (why != nullptr) failure.set(why);
      }
      return;
    }
    if (!skip && rest == 0 && rest_offset >= chunk.stop) return;
    memmove(buffer.data(), p, rest);
    base = rest_offset;
    have = rest;
  }
}

struct OpenFile {
  int fd = -1;
  off_t size = 0;
  OpenFile() = default;
  OpenFile(const OpenFile &) = delete;
  OpenFile &operator=(const OpenFile &) = delete;
  ~OpenFile() {
    if (fd >= 0) close(fd);
  }
};



PyObject *string_or_none(const std::vector<std::string> &strings, uint32_t id) {
  if (id == NONE) Py_RETURN_NONE;
  const std::string &s = strings[id];
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
}

PyObject *number_or_none(double value) {
  if (std::isnan(value)) Py_RETURN_NONE;
  return PyFloat_FromDouble(value);
}

bool set_item(PyObject *dict, const char *name, PyObject *value) {
  if (value == nullptr) return false;
  int rc = PyDict_SetItemString(dict, name, value);
  Py_DECREF(value);
  return rc == 0;
}

PyObject *cell_record(const Cell &cell, const std::vector<std::string> &strings,
                      const Options &options) {
  PyObject *d = PyDict_New();
  if (d == nullptr) return nullptr;
  bool ok = set_item(d, "side", PyLong_FromLong(cell.side)) &&
            set_item(d, "key", string_or_none(strings, cell.key)) &&
            set_item(d, "id", string_or_none(strings, cell.id)) &&
            set_item(d, "n", PyLong_FromLong(cell.n)) &&
            set_item(d, "c", PyLong_FromLong(cell.passes)) &&
            set_item(d, "bait", string_or_none(strings, cell.bait)) &&
            set_item(d, "tier", string_or_none(strings, cell.tier)) &&
            set_item(d, "title", string_or_none(strings, cell.title)) &&
            set_item(d, "durationMs", PyFloat_FromDouble(cell.duration)) &&
            set_item(d, "turnsUsed", PyFloat_FromDouble(cell.turns)) &&
            set_item(d, "tokenInput", PyFloat_FromDouble(cell.tokens)) &&
            set_item(d, "durationN", PyLong_FromLong(cell.duration_n)) &&
            set_item(d, "turnsN", PyLong_FromLong(cell.turns_n)) &&
            set_item(d, "tokenN", PyLong_FromLong(cell.tokens_n));
  if (ok) {
    PyObject *pairs = PyList_New(0);
    ok = pairs != nullptr;
    for (size_t i = 0; ok && i < cell.pairs.size(); ++i) {
      PyObject *pair = Py_BuildValue("(NN)", string_or_none(strings, cell.pairs[i].first),
                                     string_or_none(strings, cell.pairs[i].second));
      ok = pair != nullptr && PyList_Append(pairs, pair) == 0;
      Py_XDECREF(pair);
    }
    ok = ok && set_item(d, "pairs", pairs);
  }
  char name[32];
  for (size_t i = 0; ok && i < options.metrics.size(); ++i) {
    const std::vector<double> &values = cell.values[i];
    snprintf(name, sizeof name, "med%zu", i);
    ok = set_item(d, name, number_or_none(cell.medians[i]));
    if (ok && options.with_values) {
      PyObject *list = PyList_New(static_cast<Py_ssize_t>(values.size()));
      ok = list != nullptr;
      for (size_t j = 0; ok && j < values.size(); ++j) {
        PyObject *number = PyFloat_FromDouble(values[j]);
        ok = number != nullptr;
        if (ok) PyList_SET_ITEM(list, static_cast<Py_ssize_t>(j), number);
      }
      snprintf(name, sizeof name, "val%zu", i);
      ok = ok && set_item(d, name, list);
    }
  }
  if (ok && options.with_values) {
    PyObject *list = PyList_New(static_cast<Py_ssize_t>(cell.pass_list.size()));
    ok = list != nullptr;
    for (size_t j = 0; ok && j < cell.pass_list.size(); ++j) {
      PyObject *flag = cell.pass_list[j] ? Py_True : Py_False;
      Py_INCREF(flag);
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(j), flag);
    }
    ok = ok && set_item(d, "passes", list);
  }
  if (!ok) {
    Py_DECREF(d);
    return nullptr;
  }
  return d;
}

// About `target` bytes a chunk; lines are cut at newlines as they are read.
void split(int side, const OpenFile &file, off_t target, std::vector<Chunk> &chunks) {
  for (off_t start = 0; start < file.size; start += target) {
    Chunk chunk;
    chunk.side = side;
    chunk.fd = file.fd;
    chunk.start = start;
    chunk.stop = std::min(file.size, start + target);
    chunk.size = file.size;
    chunks.push_back(std::move(chunk));
  }
}

// Cells of every side, string ids global; empty `why` on success.
std::vector<Cell> merge(std::vector<Chunk> &chunks, const Options &options,
                        std::vector<std::string> &strings, std::string &why) {
  std::vector<Cell> cells;
  std::unordered_map<std::string, uint32_t> global;
  std::vector<std::unordered_map<uint32_t, size_t>> side_cells;  // key id -> index in cells
  auto intern = [&](const std::string &text) {
    auto found = global.find(text);
    if (found != global.end()) return found->second;
    uint32_t id = static_cast<uint32_t>(strings.size());
    strings.push_back(text);
    global.emplace(text, id);
    return id;
  };
  for (Chunk &chunk : chunks) {
    if (static_cast<size_t>(chunk.side) >= side_cells.size()) side_cells.resize(chunk.side + 1);
    auto &by_key = side_cells[chunk.side];
    std::vector<uint32_t> ids(chunk.strings.list.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = intern(chunk.strings.list[i]);
    auto map = [&](uint32_t id) { return id == NONE ? NONE : ids[id]; };
    for (Cell &part : chunk.cells) {
      uint32_t key = map(part.key);
      auto found = by_key.find(key);
      if (found == by_key.end()) {
        found = by_key.emplace(key, cells.size()).first;
        cells.emplace_back();
        cells.back().side = chunk.side;
        cells.back().key = key;
      }
      cells[found->second].fold(part, map);
    }
  }
  for (const Cell &cell : cells) {
    if (cell.id_conflict) why = "rows of one cell name different case ids";
    if (cell.bait_conflict) why = "rows of one cell declare different baits";
  }
  return cells;
}

// `work` on `extra` new threads and this one. The new threads block SIGINT and
// SIGTERM (they inherit the mask they are started under), so those signals
// reach the main thread, whose handlers are Python's.
template <typename Work>
void run_on_threads(size_t extra, Work &work) {
  sigset_t held, previous;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &held, &previous);
  std::vector<std::thread> pool;
  try {
    for (size_t t = 0; t < extra; ++t) pool.emplace_back(work);
  } catch (...) {
    // Too few threads: the ones started and this one do the work.
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  work();
  for (std::thread &thread : pool) thread.join();
}

bool read_options(PyObject *metrics, int headline, int with_values, Options &options) {
  PyObject *seq = PySequence_Fast(metrics, "metrics must be a sequence of names");
  if (seq == nullptr) return false;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  if (count > MAX_METRICS) {
    Py_DECREF(seq);
    PyErr_SetString(PyExc_ValueError, "too many metrics");
    return false;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    Py_ssize_t size = 0;
    const char *name = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(seq, i), &size);
    if (name == nullptr) {
      Py_DECREF(seq);
      return false;
    }
    options.metrics.emplace_back(name, static_cast<size_t>(size));
  }
  Py_DECREF(seq);
  options.headline = headline != 0;
  options.with_values = with_values != 0;
  return true;
}

PyObject *scan(PyObject *, PyObject *args, PyObject *kwargs) {
  static const char *names[] = {"sides",   "metrics",     "legacy", "headline", "with_values",
                                "threads", "chunk_bytes", "token",  nullptr};
  PyObject *sides_arg = nullptr, *metrics = nullptr, *token_arg = Py_None;
  const char *legacy_name = nullptr;
  int headline = 0, with_values = 0, threads = 1;
  long long chunk_bytes = 0;  // 0: about 16 chunks a thread; tests cut lines finer
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOs|ppiLO", const_cast<char **>(names),
                                   &sides_arg, &metrics, &legacy_name, &headline, &with_values,
                                   &threads, &chunk_bytes, &token_arg))
    return nullptr;
  // A scan started on another thread is cancelled by any `cancel()` after
  // its `token()` was taken, even one that came before the scan began.
  unsigned long started = generation.load();
  if (token_arg != Py_None) {
    started = PyLong_AsUnsignedLong(token_arg);
    if (PyErr_Occurred()) return nullptr;
  }
  Options options;
  if (!read_options(metrics, headline, with_values, options)) return nullptr;
  size_t legacy = std::find(options.metrics.begin(), options.metrics.end(), legacy_name) -
                  options.metrics.begin();
  if (legacy == options.metrics.size()) {
    PyErr_SetString(PyExc_ValueError, "legacy must name one of the metrics");
    return nullptr;
  }
  options.legacy = legacy;
  std::vector<std::vector<std::string>> sides;
  PyObject *outer = PySequence_Fast(sides_arg, "sides must be a sequence of path lists");
  if (outer == nullptr) return nullptr;
  for (Py_ssize_t s = 0; s < PySequence_Fast_GET_SIZE(outer); ++s) {
    PyObject *inner = PySequence_Fast(PySequence_Fast_GET_ITEM(outer, s), "paths");
    if (inner == nullptr) {
      Py_DECREF(outer);
      return nullptr;
    }
    sides.emplace_back();
    for (Py_ssize_t f = 0; f < PySequence_Fast_GET_SIZE(inner); ++f) {
      PyObject *encoded = PyUnicode_EncodeFSDefault(PySequence_Fast_GET_ITEM(inner, f));
      if (encoded == nullptr) {
        Py_DECREF(inner);
        Py_DECREF(outer);
        return nullptr;
      }
      sides.back().emplace_back(PyBytes_AS_STRING(encoded),
                                static_cast<size_t>(PyBytes_GET_SIZE(encoded)));
      Py_DECREF(encoded);
    }
    Py_DECREF(inner);
  }
  Py_DECREF(outer);
  threads = std::max(1, threads);

  std::string why;
  std::vector<std::string> strings;
  std::vector<Cell> cells;
  size_t total = 0;
  for (const auto &paths : sides) total += paths.size();
  std::vector<OpenFile> files(total);
  Py_BEGIN_ALLOW_THREADS;
  std::vector<Chunk> chunks;
  size_t index = 0;
  off_t bytes = 0;
  for (size_t s = 0; s < sides.size() && why.empty(); ++s) {
    for (const std::string &path : sides[s]) {
      OpenFile &file = files[index++];
      // O_NONBLOCK: a FIFO named by mistake is refused below, never waited on.
      file.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      struct stat info;
      if (file.fd < 0 || fstat(file.fd, &info) != 0 || !S_ISREG(info.st_mode) ||
          info.st_size == 0) {
        why = "a file that cannot be read";
        break;
      }
      file.size = info.st_size;
      bytes += file.size;
#ifdef POSIX_FADV_SEQUENTIAL  // not on macOS
      posix_fadvise(file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    }
  }
  if (why.empty()) {
    // Many chunks a thread even the threads out (the last chunk taken is the
    // only one a thread may wait on), whatever the files' sizes.
    off_t target = chunk_bytes > 0
                       ? static_cast<off_t>(chunk_bytes)
                       : std::max<off_t>(1 << 22, bytes / (static_cast<off_t>(threads) * 16) + 1);
    index = 0;
    for (size_t s = 0; s < sides.size(); ++s)
      for (size_t f = 0; f < sides[s].size(); ++f)
        split(static_cast<int>(s), files[index++], target, chunks);
    Failure failure;
    failure.started = started;
    std::atomic<size_t> next{0};
    auto work = [&]() {
      try {  // an exception must not leave a thread: that would abort the process
        std::vector<char> buffer;
        for (size_t i = next++; i < chunks.size(); i = next++) {
          scan_chunk(options, chunks[i], buffer, failure);
          if (failure.failed.load()) return;
        }
      } catch (const std::exception &exc) {
        failure.set(std::string("the native reader failed: ") + exc.what());
      }
    };
    size_t extra = std::min(chunks.size(), static_cast<size_t>(threads)) - (chunks.empty() ? 0 : 1);
    run_on_threads(extra, work);
    if (failure.failed.load()) why = failure.reason;
  }
  if (why.empty()) {
    try {
      cells = merge(chunks, options, strings, why);
      // Gathering and medians, cell by cell on every thread.
      std::atomic<size_t> next{0};
      std::atomic<bool> failed{false};
      auto work = [&]() {
        try {
          for (size_t i = next++; i < cells.size(); i = next++)
            cells[i].finish(options.metrics.size(), options.with_values);
        } catch (const std::exception &) {
          failed.store(true);
        }
      };
      run_on_threads(std::min(cells.size(), static_cast<size_t>(threads)) - (cells.empty() ? 0 : 1),
                     work);
      if (failed.load()) why = "the native reader ran out of memory";
    } catch (const std::exception &exc) {
      why = std::string("the native reader failed: ") + exc.what();
    }
  }
  Py_END_ALLOW_THREADS;

  if (!why.empty()) {
    PyErr_SetString(Unavailable, why.c_str());
    return nullptr;
  }
  PyObject *out = PyList_New(0);
  if (out == nullptr) return nullptr;
  for (const Cell &cell : cells) {
    PyObject *record = nullptr;
    try {
      record = cell_record(cell, strings, options);
    } catch (const std::bad_alloc &) {
      PyErr_NoMemory();
    }
    if (record == nullptr || PyList_Append(out, record) != 0) {
      Py_XDECREF(record);
      Py_DECREF(out);
      return nullptr;
    }
    Py_DECREF(record);
  }
  return out;
}

PyObject *cancel(PyObject *, PyObject *) {
  generation.fetch_add(1);
  Py_RETURN_NONE;
}

PyObject *token(PyObject *, PyObject *) { return PyLong_FromUnsignedLong(generation.load()); }

PyMethodDef methods[] = {
    {"scan", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(scan)),
     METH_VARARGS | METH_KEYWORDS,
     "scan(sides, metrics, legacy, headline=False, with_values=False, threads=1, chunk_bytes=0,\n"
     "     token=None)\n"
     "-> list[dict]\n\n"
     "One record per (side, resultKey) cell of the JSON Lines files of each side; raises\n"
     "Unavailable when a line is anything this path does not judge."},
    {"token", token, METH_NOARGS,
     "token() -> int\n\nFor scan(token=...): a scan given it stops at any cancel() after now."},
    {"cancel", cancel, METH_NOARGS,
     "cancel() -> None\n\nStop every scan running now: each raises Unavailable at its next block."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsonl_cells",
    "Cells of JSON Lines result files, read in native code (see jsonl_cells.cpp).", -1, methods,
};

}  // namespace

PyMODINIT_FUNC PyInit__jsonl_cells(void) {
  PyObject *m = PyModule_Create(&module);
  if (m == nullptr) return nullptr;
  Unavailable = PyErr_NewException("capeval.analysis._jsonl_cells.Unavailable", nullptr, nullptr);
  if (Unavailable == nullptr || PyModule_AddObjectRef(m, "Unavailable", Unavailable) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
