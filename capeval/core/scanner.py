"""The quote-aware command scanner behind the shell behavior metrics (docs/behavior-metrics.md#chain-segments).

This is deliberately a token scan, not a shell parser: agents write sloppy,
half-quoted, sometimes broken shell, and a metric must still come out. The
rules are the documented ones, kept exact because baselines are compared on them:

* split on `&&`, `||`, `|`, `;`, newline and a lone `&`;
* never inside `'…'`, `"…"`, backticks, `( … )`, `$( … )` or `${ … }` (nested
  to any depth), nor inside heredoc bodies (`<<EOF`, `<<-EOF`, `<<'EOF'`,
  `<<"EOF"`; a body runs to its delimiter line);
* `2>&1`, `>&2`, `<&0`, `&>`, `&>>` and `>|` are redirects, not separators;
* backslash-newline joins lines;
* a segment that is exactly one `( … )` group is unwrapped and split again;
* empty segments are dropped.

A heredoc is an unquoted `<<` that is not `<<<`; inside arithmetic, `$(( … ))`
or a bare `(( … ))` command (`(( n = 1 << 3 ))`, `for (( i=0; i<n; i++ ))`),
a `<<` is a shift and opens no body (else `echo $((1<<3))` would swallow every
following line as a heredoc body). As in bash, a `((` whose first `)` at its
own depth is not followed by another `)` was two subshells after all:
`((a) && b)`, like `$((a) && b)`.

Comments follow bash, because a "quote-aware" scan must see the
quotes bash sees: a `#` at the start of a word (input start, or after
unquoted white space, a newline, `;`, `&`, `|`, `<`, `>`, `(`, a subshell's
`)` or an arithmetic command's `))`) starts a comment that runs to the end
of its line and yields no words. Elsewhere it is a plain character: `a#b`,
`$#`, `${#x}`, `${x#y}`, `$((16#ff))`, `$(a)#b`, `'#'`. Without this, the
apostrophe in `# Let's fetch it` opened a quote that hid the whole rest of
a script from every metric.

The command a segment runs is found by `command_words`: leading reserved
words (`if`, `then`, `do`, `{`, `!`, `time -p`, …) and `( … )` wrappers are
looked through, and loop and case headers run no command (see there).

The scanner never raises. It is iterative (an explicit stack, no recursion), so
deeply nested input cannot exhaust the interpreter stack, and unterminated
quotes, groups or heredocs simply run to the end of the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Frame kinds of the scanner's stack.
_TOP = "top"  # the command list being split
_PAREN = "paren"  # ( … ): a subshell, a nested command list
_SUBST = "$("  # $( … ), <( … ), >( … ): a substitution, a nested command list
_DQ = '"'  # "…"
_BT = "`"  # `…`
_BRACE = "${"  # ${ … }
_ARITH = "$(("  # $(( … )): arithmetic, where << is a shift, not a heredoc
_DPAREN = "(("  # (( … )): an arithmetic command, << a shift as in $(( … ))
_ARITH_PAREN = "a("  # ( … ) inside arithmetic

_LIST_FRAMES = (_TOP, _PAREN, _SUBST)
_ARITH_FRAMES = (_ARITH, _DPAREN)  # closed by "))"
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Characters that end an unquoted heredoc delimiter word.
_WORD_END = frozenset(" \t\r\n;&|<>()")
_WHITESPACE = " \t\r\n"
# Unquoted characters after which a word starts (bash's metacharacters other
# than parentheses, which are handled where groups open and close).
_BREAKS = frozenset(" \t\n;&|<>")


@dataclass
class Segment:
    """One chain segment as the scanner saw it.

    `words` are the raw (still quoted) top-level words, so that callers can
    tell `FOO=bar cmd` (an assignment) from `"FOO=bar" cmd` (a command name).
    """

    text: str
    words: list[str] = field(default_factory=list)
    heredoc: bool = False  # an unquoted `<<` that is not `<<<`
    group: str | None = None  # inner text when the segment is exactly one ( … )


class _Scan:
    """One left-to-right pass over a command; fills `segments`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.i = 0
        self.stack: list[str] = [_TOP]
        self.segments: list[Segment] = []
        # Heredocs awaiting their body: (delimiter, strip leading tabs).
        self.pending: list[tuple[str, bool]] = []
        # The index at which a new word starts: a "#" there opens a comment,
        # a "((" there an arithmetic command. Any consumed character moves
        # the scan past it, so only the characters that end a word set it.
        self.boundary = 0
        self._reset()

    def _reset(self) -> None:
        self.buf: list[str] = []
        self.words: list[str] = []
        self.word: list[str] = []
        self.heredoc = False
        self.size = 0  # characters in buf
        # A segment like `( ( a && b ) )` is unwrapped in one pass: while only
        # white space and "(" have been seen, each "(" opens the next level.
        self.leading = True
        self.lead_opens: list[int] = []  # level k-1 -> buffer index of its "("
        self.lead_closes: dict[int, int] = {}  # level -> buffer index past its ")"
        # A leading "((" (stack index, buffer index): if it turns out to be two
        # subshells, both become leading groups.
        self.lead_dparen: tuple[int, int] | None = None

    # -- accumulation -------------------------------------------------------

    def _emit(self, s: str, lead: bool = False) -> None:
        self.buf.append(s)
        self.word.append(s)
        self.size += len(s)
        if self.leading and not lead and s.strip(_WHITESPACE):
            self.leading = False

    def _end_word(self) -> None:
        if self.word:
            self.words.append("".join(self.word))
            self.word = []

    def _flush(self) -> None:
        self._end_word()
        raw = "".join(self.buf)
        text = raw.strip(_WHITESPACE)
        if text:
            self.segments.append(Segment(text, self.words, self.heredoc, self._group(raw)))
        self._reset()

    def _group(self, raw: str) -> str | None:
        """The inner text of the deepest lone group the segment consists of, if any.

        Level k+1 is the whole of level k when only white space follows its
        ")" inside level k (nothing but white space can precede it: it is a
        leading "("). The checked stretches do not overlap: linear time.
        """
        opens, closes = self.lead_opens, self.lead_closes
        if not opens or 1 not in closes or raw[closes[1] :].strip(_WHITESPACE):
            return None
        depth = 1
        while (
            depth < len(opens)
            and depth + 1 in closes
            and not raw[closes[depth + 1] : closes[depth] - 1].strip(_WHITESPACE)
        ):
            depth += 1
        return raw[opens[depth - 1] + 1 : closes[depth] - 1]

    # -- the scan -----------------------------------------------------------

    def run(self) -> list[Segment]:
        while self.i < self.n:
            frame = self.stack[-1]
            if frame in _LIST_FRAMES:
                self._list_char(frame)
            elif frame == _DQ:
                self._dquote_char()
            elif frame == _BT:
                self._backtick_char()
            elif frame == _BRACE:
                self._brace_char()
            else:
                self._arith_char(frame)
        self._flush()
        return self.segments

    def _peek(self, k: int = 1) -> str:
        j = self.i + k
        return self.text[j] if j < self.n else ""

    def _take(self, k: int) -> None:
        self._emit(self.text[self.i : self.i + k])
        self.i += k

    def _open(self, frame: str, width: int) -> None:
        self.stack.append(frame)
        self._take(width)

    def _close(self) -> None:
        self.stack.pop()
        self._take(1)

    def _list_char(self, frame: str) -> None:
        top = frame == _TOP
        c = self.text[self.i]
        nxt = self._peek()
        if c == "#" and self.i == self.boundary:
            self._comment(top)
        elif c == "\\":
            at_boundary = self.i == self.boundary
            if nxt == "\n" and top:
                self.i += 2  # backslash-newline joins lines
            else:
                self._take(2)
            if at_boundary and nxt == "\n":
                self.boundary = self.i  # a joined line break neither starts nor ends a word
        elif c == "'":
            self._single_quote(self.i + 1)
        elif c == "$" and nxt == "'":
            self._ansi_quote()
        elif c == '"':
            self._open(_DQ, 1)
        elif c == "`":
            self._open(_BT, 1)
        elif self._dollar():
            pass
        elif c == "(":
            self._open_paren(nxt)
        elif c == ")" and frame != _TOP:
            level = len(self.stack) - 1
            self._close()
            # The first ")" at a leading level closes that leading "(": other
            # groups at that level can only open after it.
            if level <= len(self.lead_opens) and level not in self.lead_closes:
                self.lead_closes[level] = self.size
            if frame == _PAREN:
                self._after_command()  # `(a)#b`: a comment; `$(a)#b`: one word
        elif c == "<":
            self._less_than()
        elif c == "\n" and self.pending:
            self._newline_with_heredocs(top)
        elif not top:
            self._take(1)
        elif c in " \t":
            self._end_word()
            self._emit(c)
            self.word = []
            self.i += 1
        elif c in "\n;":
            self._flush()
            self.i += 1
        elif c == "&":
            self._ampersand()
        elif c == "|":
            self._bar()
        else:
            self._take(1)
        if c in _BREAKS:
            self.boundary = self.i

    def _comment(self, top: bool) -> None:
        """Skip a comment: from its `#` to the end of the line; the newline still separates.

        At the top level it is dropped, so a comment line is an empty segment.
        Inside a group it is kept as text: the group may be unwrapped and
        scanned again, and that scan skips it the same way.
        """
        end = self.text.find("\n", self.i)
        end = self.n if end < 0 else end
        if not top:
            self._emit(self.text[self.i : end])
        self.i = end

    def _open_paren(self, nxt: str) -> None:
        """Open `<( … )` / `>( … )`, an arithmetic `(( … ))`, or a subshell `( … )`."""
        if self.i > 0 and self.text[self.i - 1] in "<>":
            self._open(_SUBST, 1)  # a process substitution: part of a word
        elif nxt == "(" and (self.i == self.boundary or self._after_name_char()):
            # In command position, as bash has it (also `for (( … ))`). "(" is
            # a metacharacter, so `while((i<3))` is `while` and `((i<3))`.
            if self.leading:
                self.lead_dparen = (len(self.stack), self.size)
            if len(self.stack) == 1:
                self._end_word()
            self._open(_DPAREN, 2)
            return
        else:
            lead = self.leading
            if lead:
                self.lead_opens.append(self.size)
            self.stack.append(_PAREN)
            self._emit("(", lead=lead)
            self.i += 1
        self.boundary = self.i

    def _after_name_char(self) -> bool:
        """Whether the scan position follows a letter, digit or `_` (`for((`, `while((`)."""
        prev = self.text[self.i - 1] if self.i > 0 else ""
        return prev.isascii() and (prev.isalnum() or prev == "_")

    def _after_command(self) -> None:
        """After a subshell's `)` or an arithmetic command's `))`: a new word starts."""
        self.boundary = self.i
        if len(self.stack) == 1:
            self._end_word()  # `(a)>log` is the words `(a)` and `>log`

    def _newline_with_heredocs(self, top: bool) -> None:
        end = self._heredoc_bodies_end()
        if top:
            # Bodies are data, not commands: they end the segment and stay out
            # of its text.
            self._flush()
        else:
            # Inside a group they stay: the group may be unwrapped and scanned
            # again, and that scan must see them.
            self._emit(self.text[self.i : end])
        self.i = end

    def _single_quote(self, start: int) -> None:
        end = self.text.find("'", start)
        end = self.n if end < 0 else end + 1
        self._emit(self.text[self.i : end])
        self.i = end

    def _ansi_quote(self) -> None:
        j = self.i + 2
        while j < self.n and self.text[j] != "'":
            j += 2 if self.text[j] == "\\" else 1
        end = min(j + 1, self.n)
        self._emit(self.text[self.i : end])
        self.i = end

    def _prev_is_redirect(self) -> bool:
        return self.i > 0 and self.text[self.i - 1] in "<>"

    def _ampersand(self) -> None:
        nxt = self._peek()
        if self._prev_is_redirect() or nxt == ">":
            self._take(1)  # 2>&1, >&2, <&0, &>, &>>
        elif nxt == "&":
            self._flush()
            self.i += 2
        else:
            self._flush()  # a lone & (background)
            self.i += 1

    def _bar(self) -> None:
        if self._prev_is_redirect():
            self._take(1)  # >| (clobber)
        elif self._peek() == "|":
            self._flush()
            self.i += 2
        else:
            self._flush()
            self.i += 1

    def _less_than(self) -> None:
        run = 0
        while self.i + run < self.n and self.text[self.i + run] == "<":
            run += 1
        if run != 2:
            self._take(run)  # <, or a here-string <<< (not a heredoc)
            return
        self.heredoc = True
        self._take(2)
        strip_tabs = self._peek(0) == "-"
        if strip_tabs:
            self._take(1)
        while self.i < self.n and self.text[self.i] in " \t":
            self._take(1)
        delimiter = self._delimiter_word()
        if delimiter:
            self.pending.append((delimiter, strip_tabs))

    def _delimiter_word(self) -> str:
        """Consume the heredoc delimiter word and return it unquoted."""
        out: list[str] = []
        while self.i < self.n and self.text[self.i] not in _WORD_END:
            c = self.text[self.i]
            if c in "'\"":
                end = self.text.find(c, self.i + 1)
                end = self.n if end < 0 else end
                out.append(self.text[self.i + 1 : end])
                self._take(end + 1 - self.i)
            elif c == "\\" and self.i + 1 < self.n:
                out.append(self.text[self.i + 1])
                self._take(2)
            else:
                out.append(c)
                self._take(1)
        return "".join(out)

    def _heredoc_bodies_end(self) -> int:
        """At a newline: the index just past the bodies of this line's heredocs.

        A body runs to the line equal to its delimiter (leading tabs removed
        for `<<-`); an unterminated body runs to the end of the input.
        """
        pos = self.i + 1
        for delimiter, strip_tabs in self.pending:
            while pos < self.n:
                eol = self.text.find("\n", pos)
                eol = self.n if eol < 0 else eol
                line = self.text[pos:eol].rstrip("\r")
                if strip_tabs:
                    line = line.lstrip("\t")
                pos = eol + 1
                if line == delimiter:
                    break
        self.pending = []
        return min(pos, self.n)

    def _dquote_char(self) -> None:
        c = self.text[self.i]
        if c == "\\":
            self._take(2)
        elif c == '"':
            self._close()
        elif self._dollar():
            pass
        elif c == "`":
            self._open(_BT, 1)
        else:
            self._take(1)

    def _backtick_char(self) -> None:
        c = self.text[self.i]
        if c == "\\":
            self._take(2)
        elif c == "`":
            self._close()
        else:
            self._take(1)

    def _brace_char(self) -> None:
        c = self.text[self.i]
        if c == "\\":
            self._take(2)
        elif c == "}":
            self._close()
        elif c == "'":
            # Bash matches the braces past a quoted `}` (`${x:-'}'}`), inside
            # double quotes too, where the quotes themselves stay literal.
            self._single_quote(self.i + 1)
        elif c == "$" and self._peek() == "'":
            self._ansi_quote()
        elif c == '"':
            self._open(_DQ, 1)
        elif self._dollar():
            pass
        elif c == "`":
            self._open(_BT, 1)
        else:
            self._take(1)

    def _arith_char(self, frame: str) -> None:
        c = self.text[self.i]
        if c == "\\":
            self._take(2)
        elif c == "'":
            self._single_quote(self.i + 1)
        elif c == '"':
            self._open(_DQ, 1)
        elif c == "`":
            self._open(_BT, 1)
        elif self._dollar():
            pass
        elif c == "(":
            self._open(_ARITH_PAREN, 1)
        elif c == ")" and frame == _ARITH and self._peek() != ")":
            # `$((a) && b)` is no arithmetic: a command substitution whose
            # first command is a subshell. That ")" closed the subshell.
            self.stack[-1] = _SUBST
            self._take(1)
        elif c == ")" and frame == _DPAREN and self._peek() != ")":
            self._dparen_was_subshells()
        elif c == ")":
            self.stack.pop()
            if frame in _ARITH_FRAMES:
                self._take(2)
                if frame == _DPAREN:
                    self._after_command()
            else:
                self._take(1)
        else:
            self._take(1)

    def _dparen_was_subshells(self) -> None:
        """`((a) && b)` is no arithmetic command but a subshell in a subshell (bash
        decides the same way): the ")" at the scan position closes the inner one.

        If the `((` was leading, both of its parentheses are leading groups, so
        that `((a) && b)` is unwrapped like `( (a) && b)`.
        """
        level = len(self.stack) - 1  # the outer "(" ; the inner one is level + 1
        self.stack[-1] = _PAREN
        self._take(1)
        if self.lead_dparen is not None and self.lead_dparen[0] == level:
            start = self.lead_dparen[1]
            self.lead_opens.extend((start, start + 1))
            self.lead_closes[level + 1] = self.size
        self.lead_dparen = None
        self.boundary = self.i

    def _dollar(self) -> bool:
        """Open `$((`, `$(` or `${` at the scan position; False if there is none."""
        if self.text[self.i] != "$":
            return False
        nxt = self._peek()
        if nxt == "(" and self._peek(2) == "(":
            self._open(_ARITH, 3)
        elif nxt == "(":
            self._open(_SUBST, 2)
            self.boundary = self.i  # `$( # note` opens a comment, as in bash
        elif nxt == "{":
            self._open(_BRACE, 2)
        else:
            return False
        return True


def scan_segments(command: str) -> list[Segment]:
    """Every chain segment of `command`, with `( … )`-only segments unwrapped.

    Iterative on purpose: unwrapping `((((a))))` must not recurse.
    """
    out: list[Segment] = []
    pending = [iter(_Scan(command).run())]
    while pending:
        segment = next(pending[-1], None)
        if segment is None:
            pending.pop()
        elif segment.group is not None:
            pending.append(iter(_Scan(segment.group).run()))
        else:
            out.append(segment)
    return out


def split_segments(command: str) -> list[str]:
    """The chain segments of a shell command (docs/behavior-metrics.md#chain-segments), stripped, none empty."""
    return [s.text for s in scan_segments(command)]


def is_env_assignment_word(word: str) -> bool:
    """True for a raw word like `FOO=bar` or `FOO="a b"`.

    Takes the word as written: a quoted `"FOO=bar"` is a command name to the
    shell, not an assignment, and does not match.
    """
    return _ENV_ASSIGNMENT.match(word) is not None


def _first_segment(segment: str | Segment) -> Segment | None:
    if isinstance(segment, Segment):
        return segment
    found = _Scan(segment).run()
    return found[0] if found else None


# Reserved words that may stand before a command and are none themselves
# (bash grammar): `then curl x` runs `curl`, `{ curl x` too.
_COMMAND_PREFIXES = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}
)
_TIME_OPTIONS = frozenset({"-p", "--"})
# Headers whose words are a variable name and a word list (or an arithmetic
# `(( … ))`), never a command: `for curl in a b` runs nothing.
_LOOP_HEADERS = frozenset({"for", "select"})
# Closers of compound commands: only redirections can follow them.
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
# A function's name in a definition header (`f() { … }`, `function f { … }`):
# bash takes more than a variable name, but never quotes, `$` or `=` (`a=()`
# assigns an empty array).
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")
# A word that redirects (`>`, `2>&1`, `&>f`, `{fd}<f`): after a `( … )` it
# keeps that a subshell; any other word makes it a case pattern `(a) cmd`.
_REDIRECT = re.compile(r"(?:[0-9]+|\{[A-Za-z_][A-Za-z0-9_]*\})?[<>]|&>")


def _ends_case_pattern(word: str) -> bool:
    """Whether a raw word ends a case pattern: an unquoted `)` that nothing in
    the word opened (`a)`, `*)`, `"x y")`). At the top level a scan only keeps
    such a `)` for a case item; `$(a)` and `(a)` are balanced."""
    depth = 0
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            i += 1
        elif c == "'":
            end = word.find("'", i + 1)
            i = n if end < 0 else end
        elif c == '"':
            i += 1
            while i < n and word[i] != '"':
                i += 2 if word[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return depth < 0 and word.endswith(")")


def _group_words(word: str) -> list[str] | None:
    """The words of the first command inside a `( … )` word; None if the word
    is no lone group (an arithmetic `(( … ))` command runs none)."""
    found = _Scan(word).run()
    if not found or found[0].group is None:
        return None
    seg = found[0]
    while seg.group is not None:
        inner = _Scan(seg.group).run()
        if not inner:
            return []  # `( )`, `( # note )`
        seg = inner[0]
    return seg.words


def command_words(segment: str | Segment) -> list[str]:
    """The raw words of the simple command a segment runs, from its first
    assignment or its command word on; [] if it runs none.

    The spec measures "the command word" of a segment. A token scan leaves
    shell grammar in the segments (`do sed -i …`, `then curl x`, `{ curl a`),
    and taking `do` or `{` as the command would let any loop, `if` or brace
    group hide the command that really runs. So, as bash reads them:

    * leading reserved words are skipped: `if`, `then`, `else`, `elif`, `do`,
      `while`, `until`, `!`, `{`, and `time` with its `-p` / `--`;
    * `for` / `select` headers (a variable name and an `in` list) and the
      closers `fi`, `done`, `esac`, `}` run no command;
    * `case WORD in` runs none; a case pattern (`a)`, `*)`, `(a)` before a
      command) is skipped, so `case $x in a) curl u` runs `curl`;
    * a function definition header (`f()`, `f ()`, `function f`) is
      skipped: `f() { curl x; }` runs `curl` when called, and written on
      several lines its body is a segment of its own anyway;
    * a `( … )` subshell is entered: `( curl x ) > log` runs `curl`, its
      first command. Each step rescans a shorter text, never recursing.
    """
    seg = _first_segment(segment)
    if seg is None:
        return []
    words = seg.words
    i = 0
    while i < len(words):
        word = words[i]
        if word in _COMMAND_PREFIXES:
            i += 1
            if word == "time":
                while i < len(words) and words[i] in _TIME_OPTIONS:
                    i += 1
        elif word in _LOOP_HEADERS or word in _CLOSERS:
            return []
        elif word == "case":
            i += 3  # case WORD in
            if i < len(words) and words[i].startswith("("):
                i += 1  # `(pattern)`
            else:
                while i < len(words) and not _ends_case_pattern(words[i]):
                    i += 1
                i += 1
        elif word == "function":
            i += 2  # function NAME
            if i < len(words) and words[i] == "()":
                i += 1
        elif word.endswith("()") and _FUNCTION_NAME.fullmatch(word[:-2]):
            i += 1  # NAME() { …: the body is the command
        elif i + 1 < len(words) and words[i + 1] == "()" and _FUNCTION_NAME.fullmatch(word):
            i += 2  # NAME () { …
        elif _ends_case_pattern(word):
            i += 1
        elif word.startswith("("):
            if i + 1 < len(words) and not _REDIRECT.match(words[i + 1]):
                i += 1  # `(a) curl x`: a case pattern (a subshell takes only redirections)
                continue
            inner = _group_words(word)
            if inner is None:
                return []
            words, i = inner, 0
        else:
            return words[i:]
    return []


def sets_env(segment: str | Segment) -> bool:
    """Whether a segment's command starts with an environment assignment or `export`.

    Only the first word of the command counts (`command_words`: `then FOO=1
    make` assigns): `make mode=release` passes an argument, it assigns nothing.
    """
    words = command_words(segment)
    return bool(words) and (words[0] == "export" or is_env_assignment_word(words[0]))


def command_word(segment: str | Segment) -> str | None:
    """The command a segment runs: the first word of `command_words` that is not
    an assignment, unquoted; None if the segment runs no command.

    `FOO=1 BAR=2 curl x` and `then curl x` run `curl`. Wrappers such as `env`,
    `sudo` or `timeout` are not looked through: the spec defines the command
    word literally, and old baselines were measured that way.
    """
    for word in command_words(segment):
        if not is_env_assignment_word(word):
            return unquote_word(word)
    return None


def has_heredoc(segment: str | Segment) -> bool:
    """Whether a segment holds an unquoted `<<` that is not a here-string `<<<`."""
    if isinstance(segment, Segment):
        return segment.heredoc
    return any(s.heredoc for s in _Scan(segment).run())


def segment_words(segment: str | Segment) -> list[str]:
    """The words of a segment, unquoted (for option checks such as `sed -i`)."""
    seg = _first_segment(segment)
    return [unquote_word(w) for w in seg.words] if seg else []


# -- unquoting -------------------------------------------------------------

_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_NUMERIC = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}")
# Inside "…", a backslash escapes only these (bash); before anything else it stays.
_DQ_ESCAPABLE = '$`"\\\n'
# Unquoted characters that make a word more than a literal string.
_SPECIAL = frozenset("$`<>()|&;*?[")


def _ansi_c(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
            continue
        m = _ANSI_NUMERIC.match(body, i + 1)
        if m:
            digits = m.group()
            code = int(digits, 8) if digits[0] in "01234567" else int(digits[1:], 16)
            out.append(chr(min(code, 0x10FFFF)))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _unquote(word: str) -> tuple[str, bool]:
    """(value, plain): the word as the shell would pass it, and whether it is a
    plain literal (no unquoted expansion, glob or operator character).

    Expansions inside double quotes are kept as text and do not make a word
    non-plain: the value is the script as written, which is what metrics read.
    """
    out: list[str] = []
    plain = True
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            if i + 1 < n and word[i + 1] != "\n":
                out.append(word[i + 1])
            i += 2
        elif c == "'":
            end = word.find("'", i + 1)
            end = n if end < 0 else end
            out.append(word[i + 1 : end])
            i = end + 1
        elif c == "$" and i + 1 < n and word[i + 1] == "'":
            j = i + 2
            while j < n and word[j] != "'":
                j += 2 if word[j] == "\\" else 1
            out.append(_ansi_c(word[i + 2 : min(j, n)]))
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and word[j] != '"':
                if word[j] == "\\" and j + 1 < n and word[j + 1] in _DQ_ESCAPABLE:
                    if word[j + 1] != "\n":
                        out.append(word[j + 1])
                    j += 2
                    continue
                out.append(word[j])
                j += 1
            i = j + 1
        else:
            if c in _SPECIAL:
                plain = False
            out.append(c)
            i += 1
    return "".join(out), plain


def unquote_word(word: str) -> str:
    """A raw shell word with its quoting removed (`'a b'"c"\\d` -> `a bcd`)."""
    return _unquote(word)[0]


def literal_word(word: str) -> str | None:
    """The unquoted word if it is a plain literal, else None (it expands or redirects)."""
    value, plain = _unquote(word)
    return value if plain else None
