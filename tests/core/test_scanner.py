"""The quote-aware chain-segment scanner: one test group per rule of docs/behavior-metrics.md."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capeval.core.behaviors import derive_behaviors
from capeval.core.runsummary import summary_from_json
from capeval.core.scanner import (
    command_word,
    command_words,
    has_heredoc,
    is_env_assignment_word,
    literal_word,
    scan_segments,
    segment_words,
    sets_env,
    split_segments,
    unquote_word,
)


def shell(command: str) -> dict[str, Any]:
    """Behaviors of one Claude Code `Bash` call running `command`."""
    call = {"name": "Bash", "arguments": {"command": command}}
    return derive_behaviors(summary_from_json({"turns": [{"toolCalls": [call]}]}))


SEPARATORS = [
    ("a && b", ["a", "b"]),
    ("a || b", ["a", "b"]),
    ("a | b", ["a", "b"]),
    ("a; b", ["a", "b"]),
    ("a\nb", ["a", "b"]),
    ("sleep 1 & wait", ["sleep 1", "wait"]),
    ("server &", ["server"]),
    ("a | b || c", ["a", "b", "c"]),
    ("a&&b||c|d;e&f", ["a", "b", "c", "d", "e", "f"]),
    ("ls |& grep x", ["ls", "grep x"]),
]

REDIRECTS = [
    ("make 2>&1 | tee log", ["make 2>&1", "tee log"]),
    ("echo hi >&2 && x", ["echo hi >&2", "x"]),
    ("cmd &> out && x", ["cmd &> out", "x"]),
    ("cmd &>> out; x", ["cmd &>> out", "x"]),
    ("cmd 1>&2 2>&1 <&0", ["cmd 1>&2 2>&1 <&0"]),
    ("echo x >| f && y", ["echo x >| f", "y"]),
]

QUOTES = [
    ("echo 'a && b; c | d'", ["echo 'a && b; c | d'"]),
    ('echo "a && b; c | d"', ['echo "a && b; c | d"']),
    ('echo "it\'s && fine" && x', ['echo "it\'s && fine"', "x"]),
    ("echo 'say \"hi\" && bye' | y", ["echo 'say \"hi\" && bye'", "y"]),
    ('echo "a \\" && b" ; c', ['echo "a \\" && b"', "c"]),
    ("echo $'a\\' && b' ; c", ["echo $'a\\' && b'", "c"]),
    ("echo a\\;b && c", ["echo a\\;b", "c"]),
    ("echo a\\&\\& b", ["echo a\\&\\& b"]),
]

SUBSTITUTIONS = [
    ("echo `a && b` ; c", ["echo `a && b`", "c"]),
    ("echo $(a; b) && c", ["echo $(a; b)", "c"]),
    ("echo $(a; $(b && c) | d) && e", ["echo $(a; $(b && c) | d)", "e"]),
    ('echo "x $(b "c && d") y" && f', ['echo "x $(b "c && d") y"', "f"]),
    ("echo \"$(printf ')' ; echo '(')\" | x", ["echo \"$(printf ')' ; echo '(')\"", "x"]),
    ("echo ${x:-a;b} && c", ["echo ${x:-a;b}", "c"]),
    ("diff <(sort a; echo) <(sort b) && ok", ["diff <(sort a; echo) <(sort b)", "ok"]),
    ("echo $((1 | 2)) ; y", ["echo $((1 | 2))", "y"]),
    ("echo $(( (1 | 2) << 3 )) ; y", ["echo $(( (1 | 2) << 3 ))", "y"]),
    ("x=$(( $(a; b) + 1 )) && y", ["x=$(( $(a; b) + 1 ))", "y"]),
    ("echo $((a) && b) ; c", ["echo $((a) && b)", "c"]),  # a subshell in $( ), not arithmetic
]

GROUPS = [
    ("(a && b)", ["a", "b"]),
    ("( a && b )", ["a", "b"]),
    ("(a; (b || c))", ["a", "b", "c"]),
    ("(a) && (b | c)", ["a", "b", "c"]),
    ("( ( ( (a && b) ) ) )", ["a", "b"]),
    ("((a) && b)", ["a", "b"]),  # "((" whose ")" is not "))": two subshells, as in bash
    ("( ((a) && b) )", ["a", "b"]),
    ("((a) && b) > log", ["((a) && b) > log"]),
    ("( a && b ) > log", ["( a && b ) > log"]),
    ("(a) (b)", ["(a) (b)"]),
    ("$(a && b)", ["$(a && b)"]),
    ("x && (cd sub && make) && y", ["x", "cd sub", "make", "y"]),
]

EMPTY = [
    ("a ;; b", ["a", "b"]),
    ("; ; a ;", ["a"]),
    ("&& a ||", ["a"]),
    ("", []),
    ("   \n\t ", []),
    ("()", []),
]

BACKSLASH_NEWLINE = [
    ("a \\\n  && b", ["a", "b"]),
    ("echo foo\\\nbar", ["echo foobar"]),
    ("make \\\n  -j4 \\\n  all", ["make   -j4   all"]),
    ("echo 'a\\\nb'", ["echo 'a\\\nb'"]),  # literal inside single quotes: no join, no split
]

HEREDOCS = [
    ("cat <<EOF > f\na && b; c | d\nEOF\necho done", ["cat <<EOF > f", "echo done"]),
    ("cat <<-EOF\n\tx; y\n\tEOF\nz", ["cat <<-EOF", "z"]),
    ("cat <<'EOF'\n$(a; b) `c`\n'unbalanced\nEOF", ["cat <<'EOF'"]),
    ('cat <<"EOF" >> f\na | b\nEOF', ['cat <<"EOF" >> f']),
    ("cat << EOF\na & b\nEOF", ["cat << EOF"]),
    ("python - <<PY && echo ok\nprint(1); print(2)\nPY", ["python - <<PY", "echo ok"]),
    ("cat <<A; cat <<B\na;b\nA\nc|d\nB\nls", ["cat <<A", "cat <<B", "ls"]),
    ("cat <<EOF\na && b\n  EOF\nc", ["cat <<EOF"]),  # indented delimiter does not end <<
    ("cat <<EOF\na && b", ["cat <<EOF"]),  # unterminated: body runs to the end
    ("x=$(cat <<EOF\n)\nEOF\n) && y", ["x=$(cat <<EOF\n)\nEOF\n)", "y"]),
    ("(cat <<EOF\n) ; (\nEOF\n) && z", ["cat <<EOF", "z"]),
    ("cat <<< 'a && b' && c", ["cat <<< 'a && b'", "c"]),
    ('echo "<<EOF"\na && b\nEOF', ['echo "<<EOF"', "a", "b", "EOF"]),
    ("echo $((1<<3))\nls && pwd", ["echo $((1<<3))", "ls", "pwd"]),  # a shift opens no body
    ("cat <<EOF # it's\na && b\nEOF\nc", ["cat <<EOF", "c"]),  # a comment after the word
]

# `#` starts a comment at the start of a word only, as in bash (checked
# against it below); a comment runs to the end of its line and has no words.
COMMENTS = [
    (
        "# Let's fetch the page\ncurl -s http://x/x > out.txt\nsed -i 's/a/b/' out.txt",
        ["curl -s http://x/x > out.txt", "sed -i 's/a/b/' out.txt"],
    ),
    ("ls # a && b", ["ls"]),
    ("ls #it's\npwd", ["ls", "pwd"]),
    ("# only a comment", []),
    ("a;# x\nb", ["a", "b"]),
    ("a&&#x\nb", ["a", "b"]),
    ("a|#x\nb", ["a", "b"]),
    ("a&#x\nb", ["a", "b"]),
    ("\t#x\nb", ["b"]),
    ("(a)#it's\nb", ["a", "b"]),  # after a subshell's ")"
    ("(( 1 ))#it's\nb", ["(( 1 ))", "b"]),  # after an arithmetic command's "))"
    ("(a # it's )\n) && b", ["a", "b"]),  # in a group: swallows ")", then unwrapped
    ("(a && b) # it's", ["a", "b"]),  # a comment after a lone group keeps it lone
    ("echo $(a # it's )\n) && b", ["echo $(a # it's )\n)", "b"]),
    ("echo $( # c\na) && b", ["echo $( # c\na)", "b"]),
    ("a \\\n#b\nc", ["a", "c"]),  # backslash-newline after a space: still a word start
    ("# a \\\necho hi", ["echo hi"]),  # no line continuation in a comment
    # Not comments: inside a word, parameter expansions, arithmetic, quotes, escapes.
    ("echo a#b && c", ["echo a#b", "c"]),
    ("echo $# ${#x} ${x#y} ${x##*/} && c", ["echo $# ${#x} ${x#y} ${x##*/}", "c"]),
    ("echo $((16#ff)) && c", ["echo $((16#ff))", "c"]),
    ("echo $(a)#b && c", ["echo $(a)#b", "c"]),  # a substitution's ")" does not end a word
    ("cat <(a)#b && c", ["cat <(a)#b", "c"]),
    ("echo '# a && b' \"# c; d\" && e", ["echo '# a && b' \"# c; d\"", "e"]),
    ("echo \\# a && b", ["echo \\# a", "b"]),
    ("echo `a #b` && c", ["echo `a #b`", "c"]),
    ("a\\\n#b && c", ["a#b", "c"]),  # the join makes one word
]

# A bare `(( … ))` is an arithmetic command, like `$(( … ))`: its `<<` is a
# shift, no heredoc, and it is one segment.
ARITHMETIC = [
    ("(( n = 1 << 3 ))\ncurl a && wget b", ["(( n = 1 << 3 ))", "curl a", "wget b"]),
    ("((n<<=2)) && x", ["((n<<=2))", "x"]),
    ("(( (a | b) << 1 )) ; y", ["(( (a | b) << 1 ))", "y"]),
    ("(( a && b || c ))", ["(( a && b || c ))"]),
    ("((((a && b))))", ["((((a && b))))"]),  # bash: arithmetic, not four subshells
    (
        "for (( i=0; i<n; i++ )); do x; done",
        ["for (( i=0; i<n; i++ ))", "do x", "done"],
    ),
    (
        "for ((i = 1 << 2; i; i >>= 1))\ndo x\ndone",
        ["for ((i = 1 << 2; i; i >>= 1))", "do x", "done"],
    ),
    ("while((i<1<<1)); do x; done\ny", ["while((i<1<<1))", "do x", "done", "y"]),
    ("for((i=0;i<1<<3;i++))\ndo x\ndone", ["for((i=0;i<1<<3;i++))", "do x", "done"]),
    ("x && ( (( y << 1 )) )\nz", ["x", "(( y << 1 ))", "z"]),
    ("echo $( (( y << 1 )) )\nz", ["echo $( (( y << 1 )) )", "z"]),
]


def _ids(cases: list[tuple[str, list[str]]]) -> list[str]:
    return [repr(c)[:40] for c, _ in cases]


@pytest.mark.parametrize(("command", "expected"), SEPARATORS, ids=_ids(SEPARATORS))
def test_splits_on_every_separator(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), REDIRECTS, ids=_ids(REDIRECTS))
def test_redirects_are_not_separators(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), QUOTES, ids=_ids(QUOTES))
def test_never_splits_inside_quotes_or_escapes(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), SUBSTITUTIONS, ids=_ids(SUBSTITUTIONS))
def test_never_splits_inside_substitutions(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), GROUPS, ids=_ids(GROUPS))
def test_lone_group_is_unwrapped_and_split_again(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), EMPTY, ids=_ids(EMPTY))
def test_empty_segments_are_dropped(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), BACKSLASH_NEWLINE, ids=_ids(BACKSLASH_NEWLINE))
def test_backslash_newline_joins_lines(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), HEREDOCS, ids=_ids(HEREDOCS))
def test_never_splits_inside_heredoc_bodies(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), COMMENTS, ids=_ids(COMMENTS))
def test_comments_run_to_the_end_of_the_line(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(("command", "expected"), ARITHMETIC, ids=_ids(ARITHMETIC))
def test_arithmetic_commands_open_no_heredoc(command: str, expected: list[str]) -> None:
    assert split_segments(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "echo 'abc && d",
        'echo "abc; d',
        "echo $(a; b",
        "(a && b",
        "echo `a; b",
        "echo ${a; b",
        "x \\",
        "(( a && b",
        "(a # b && c",
    ],
)
def test_unterminated_constructs_run_to_the_end(command: str) -> None:
    assert split_segments(command) == [command]


def test_deep_nesting_neither_recurses_nor_raises() -> None:
    depth = 20_000
    assert split_segments("( " * depth + "a && b" + " )" * depth) == ["a", "b"]
    # Unspaced, bash reads "((" as arithmetic: one segment, still no recursion.
    nested = "(" * depth + "a && b" + ")" * depth
    assert split_segments(nested) == [nested]
    # Each "((" turns into two subshells: nested 2 * depth deep, unterminated.
    assert split_segments("((a) &&" * depth) == ["((a) &&" * depth]
    assert split_segments("$(" * depth) == ["$(" * depth]
    assert split_segments('"$(' * depth) == ['"$(' * depth]


# -- heredoc detection -------------------------------------------------------


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        ("cat <<EOF > f", True),
        ("cat <<-EOF", True),
        ("cat <<'EOF'", True),
        ('cat <<"EOF"', True),
        ("cat<<EOF", True),
        ("cat <<", True),  # an unquoted << even without its word
        ("echo $(cat <<EOF)", True),
        ("cat <<< word", False),
        ("cat <<<word", False),
        ('echo "<<EOF"', False),
        ("echo '<<EOF'", False),
        ("echo \\<<EOF", False),
        ("echo a < b", False),
        ("echo $((1 << 3))", False),  # an arithmetic shift
        ('echo "$((x<<2))"', False),
        ("(( n = 1 << 3 ))", False),  # an arithmetic command
        ("for (( i = 1 << 2; i; i-- ))", False),
        ("while((i<1<<2))", False),
        ("( (cat <<EOF) )", True),  # "( (" is no arithmetic
        ("# cat <<EOF", False),  # a comment
    ],
)
def test_heredoc_detector(segment: str, expected: bool) -> None:
    assert has_heredoc(segment) is expected


# -- words, command word, env assignments ----------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("FOO=bar", True),
        ("_X1=", True),
        ('FOO="a b"', True),
        ("foo_bar=1", True),
        ("1FOO=bar", False),
        ("=bar", False),
        ("FOO", False),
        ('"FOO=bar"', False),  # quoted: a command name, not an assignment
        ("--mode=release", False),
        ("FOO-BAR=1", False),
    ],
)
def test_env_assignment_word(word: str, expected: bool) -> None:
    assert is_env_assignment_word(word) is expected


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        ("FOO=bar make", True),
        ("A=1 B=2 ./run", True),
        ("FOO=bar", True),
        ("export X=1", True),
        ("export PATH", True),
        ("echo mode=release", False),
        ("make mode=release", False),
        ("env FOO=1 curl x", False),  # spec: first word only; `env` is a command
        ('"FOO=bar" cmd', False),
        ("exported=1 x", True),
        ("exporter run", False),
        # The first word of the command: reserved words and groups are looked through.
        ("then FOO=1 make", True),
        ("do export X=1", True),
        ("{ A=1 b", True),
        ("if ! FOO=1 test -f x", True),
        ("(FOO=1 make) > log", True),
        ("then make FOO=1", False),
        ("for FOO in 1 2", False),
        ("(( FOO=1 ))", False),  # an arithmetic assignment, no environment
    ],
)
def test_sets_env_looks_at_the_first_word_only(segment: str, expected: bool) -> None:
    assert sets_env(segment) is expected


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        ("curl -s http://x", "curl"),
        ("FOO=bar BAZ='a b' curl x", "curl"),
        ('"curl" x', "curl"),
        ("\\curl x", "curl"),
        ("/usr/bin/curl x", "/usr/bin/curl"),
        ("env FOO=1 curl", "env"),
        ("FOO=1", None),
        ("", None),
        ("  echo   hi  ", "echo"),
    ],
)
def test_command_word_skips_assignments(segment: str, expected: str | None) -> None:
    assert command_word(segment) == expected


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        ("then curl x", "curl"),
        ("do sed -i s/a/b/ f", "sed"),
        ("else curl x", "curl"),
        ("elif curl x", "curl"),
        ("if curl -s x", "curl"),
        ("while curl x", "curl"),
        ("until curl x", "curl"),
        ("! curl x", "curl"),
        ("{ curl a", "curl"),
        ("time curl x", "curl"),
        ("time -p curl x", "curl"),
        ("if ! time -p FOO=1 curl x", "curl"),
        ("( curl x ) > log", "curl"),
        ("(curl x)>log", "curl"),
        ("! ( ( curl x ) ) 2>&1", "curl"),
        ("then (cd a && curl x)", "cd"),  # the group's first command
        ("case $x in a) curl u", "curl"),
        ("case $x in (a) curl u", "curl"),
        ('case "$1" in --fetch|-f) curl u', None),  # "|" splits: the pattern's rest next
        ("-f) curl u", "curl"),
        ("*) wget v", "wget"),
        ('"x y") wget v', "wget"),
        ("(b) wget v", "wget"),  # "(b)" then a command: a case pattern, no subshell
        # Reserved only unquoted and first: otherwise a command or an argument.
        ("'then' x", "then"),
        ("echo then curl", "echo"),
        ("if=1 curl x", "curl"),
        ("{curl,wget}", "{curl,wget}"),
        # No command at all.
        ("do", None),
        ("for curl in a b", None),  # a variable name and a word list
        ("select curl in a b", None),
        ("for ((i=0; i<n; i++))", None),
        ("case curl in", None),
        ("done > log", None),
        ("fi", None),
        ("esac", None),
        ("} 2>&1", None),
        ("(( curl = 1 ))", None),  # arithmetic
        ("while (( i < 3 ))", None),
        ("while((i<3))", None),  # "(" ends the word `while`
        ("for((i=0;i<3;i++))", None),
        ("( ) > log", None),
    ],
)
def test_command_word_looks_through_shell_grammar(segment: str, expected: str | None) -> None:
    assert command_word(segment) == expected


def test_command_words_start_at_the_command() -> None:
    assert command_words("if ! time -p FOO=1 curl -s 'a b'") == ["FOO=1", "curl", "-s", "'a b'"]
    assert command_words("for f in a b") == []


def test_arithmetic_and_groups_are_words() -> None:
    """`(` ends a word at the top level, as in bash; inside a group it is text."""
    assert segment_words("while((i<3)) >x") == ["while", "((i<3))", ">x"]
    assert segment_words("( (( y )) ) > log") == ["( (( y )) )", ">", "log"]
    assert segment_words("(a)>log") == ["(a)", ">log"]
    assert segment_words("echo $(a)b <(c)d") == ["echo", "$(a)b", "<(c)d"]


def test_segment_words_are_unquoted() -> None:
    assert segment_words("sed '-i' \"s/a b/c/\" f\\ g") == ["sed", "-i", "s/a b/c/", "f g"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("'a b'", "a b"),
        ('"a \\$x \\" \\\\ \\n"', 'a $x " \\ \\n'),  # bash keeps \n inside "…"
        ("a\\ b", "a b"),
        ("'it'\\''s'", "it's"),
        ("$'a\\tb\\x41\\101\\u00e9'", "a\tbAAé"),
        ("\"a\"'b'c", "abc"),
        ('"multi\\\nline"', "multiline"),
    ],
)
def test_unquote_word_follows_bash(word: str, expected: str) -> None:
    assert unquote_word(word) == expected


def test_literal_word_rejects_unquoted_expansions_and_redirects() -> None:
    assert literal_word("'$HOME'") == "$HOME"
    assert literal_word('"$HOME"') == "$HOME"
    assert literal_word("$HOME") is None
    assert literal_word("'x'>out") is None
    assert literal_word("`x`") is None


def test_a_function_header_is_no_command() -> None:
    """`f () { FOO=1 make; }` assigns in its body; `arr=()` is no header."""
    assert shell("f () { FOO=1 make; }")["envAssignmentCommandCount"] == 1
    assert command_word("arr=() curl u") == "curl"
    assert shell("arr=()")["envAssignmentCommandCount"] == 1
    assert command_word("get()") is None


def test_a_quoted_paren_in_a_case_pattern_is_no_parenthesis() -> None:
    """`"(")` is a case pattern: the quoted "(" opens nothing."""
    assert command_word('case $x in "(") curl u') == "curl"


def test_process_substitution_for_output_is_part_of_a_word() -> None:
    """After `>( … )`, as after `<( … )`, a `#` continues the word."""
    assert shell("tee >(cat)#b && curl u")["chainSegmentCount"] == 2
    assert shell("tee >(cat)#b && curl u")["networkCommandCount"] == 1


def test_ansi_c_octal_escapes_of_every_digit() -> None:
    assert unquote_word("$'\\177\\7\\101'") == "\x7f\x07A"
    assert unquote_word("$'\\UFFFFFFFF'") == chr(0x10FFFF)  # out of range: clamped, no error


# -- properties ---------------------------------------------------------------

SHELLISH = st.text(alphabet="ab &|;()<>-'\"`$\\{}\n\tEOF=#", max_size=80)


@settings(max_examples=400, deadline=None)
@given(st.one_of(SHELLISH, st.text(max_size=80)))
def test_scanner_never_raises_and_returns_clean_segments(command: str) -> None:
    segments = split_segments(command)
    assert all(s and s == s.strip(" \t\r\n") for s in segments)
    for segment in segments[:3]:
        command_word(segment)
        sets_env(segment)
        has_heredoc(segment)


SAFE_WORD = st.text(alphabet="abcdefxyz0123456789._/-", min_size=1, max_size=8).filter(
    lambda w: not w.startswith("-")
)
SEPARATOR = st.sampled_from([" && ", " || ", " | ", " ; ", "\n", " & ", ";", "&&", "|"])
# Text that would split if it were not protected: separators, newlines, parens.
DANGEROUS = st.text(alphabet="ab &|;\n()<>", min_size=1, max_size=12)


@st.composite
def protected_word(draw: st.DrawFn) -> str:
    inner = draw(DANGEROUS)
    kind = draw(st.sampled_from(["single", "double", "backtick", "subst", "ansi"]))
    if kind == "single":
        return f"'{inner}'"
    if kind == "ansi":
        return f"$'{inner}'"
    if kind == "double":
        return f'"{inner}"'
    if kind == "backtick":
        return f"`{inner}`"
    # Inside $( … ) parentheses must balance, and a << would really open a
    # heredoc there (whose body may swallow the ")"), as it does in bash.
    return "$(" + inner.replace("(", "").replace(")", "").replace("<", "") + ")"


@st.composite
def chain(draw: st.DrawFn) -> tuple[str, list[str]]:
    segments = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        words = draw(st.lists(st.one_of(SAFE_WORD, protected_word()), min_size=1, max_size=4))
        segments.append(" ".join(words))
    command = segments[0]
    for segment in segments[1:]:
        command += draw(SEPARATOR) + segment
    return command, segments


@pytest.mark.slow
@settings(max_examples=250, deadline=None)
@given(chain())
def test_round_trip_never_splits_inside_quotes(case: tuple[str, list[str]]) -> None:
    command, segments = case
    assert split_segments(command) == segments


@settings(max_examples=150, deadline=None)
@given(chain(), st.text(alphabet="ab &|;()<>'\"`$\\{}#", max_size=20))
def test_comments_add_no_segments(case: tuple[str, list[str]], note: str) -> None:
    """Whatever a comment holds (quotes, separators, parentheses), it hides nothing."""
    command, segments = case
    assert split_segments(f"# {note}\n{command} #{note}\n# {note}") == segments


# Words built of pieces bash always accepts, so that it never reports a
# syntax error: `#` alone, inside a word, escaped, quoted, after white space.
BASH_PIECE = st.one_of(
    st.sampled_from(["a", "b", "#", "\\#", "\\ ", "\\'", '\\"', " ", "\t", " #", "a#"]),
    st.text(alphabet='ab #"', max_size=4).map(lambda t: f"'{t}'"),
    st.text(alphabet="ab #'", max_size=4).map(lambda t: f'"{t}"'),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(BASH_PIECE, max_size=12).map("".join))
def test_comment_rule_agrees_with_real_bash(text: str) -> None:
    """The words the scanner keeps on a line with `#` are the arguments bash passes."""
    command = "printf '%s\\0' - " + text  # "-": printf prints once with no argument too
    out = subprocess.run(["bash", "-c", command], capture_output=True, check=True).stdout
    argv = out.decode().split("\0")[:-1]
    [segment] = scan_segments(command)
    assert [unquote_word(w) for w in segment.words[2:]] == argv


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(chain(), st.lists(DANGEROUS, max_size=5))
def test_heredoc_body_adds_no_segments(case: tuple[str, list[str]], body: list[str]) -> None:
    command, segments = case
    lines = [line for text in body for line in text.split("\n") if line != "EOF"]
    with_heredoc = "cat <<EOF > notes\n" + "\n".join([*lines, "EOF"]) + "\n" + command
    assert split_segments(with_heredoc) == ["cat <<EOF > notes", *segments]


# -- real bash as the judge -----------------------------------------------------
# Each script is straight-line shell: bash runs it with `curl` defined as a
# function that only counts its calls, and the network metric must count
# exactly the calls bash made.


def bash_curl_calls(script: str, tmp_path: Path) -> int:
    """How many times real bash runs `curl` in `script` (a counting stand-in)."""
    log = tmp_path / "curl.log"
    prelude = f"curl() {{ echo x >> '{log}'; }}; export -f curl\n"
    subprocess.run(
        ["bash", "-c", prelude + script],
        cwd=tmp_path,
        capture_output=True,
        timeout=30,
        check=False,
    )
    return len(log.read_text().splitlines()) if log.exists() else 0


# (script, chain segments, network commands, shell edits)
SCRIPTS = [
    # `<<\EOF` quotes its delimiter with a backslash: the body ends at `EOF`.
    ("cat <<\\EOF > f\ncurl a; b && c\nEOF\ncurl u", 2, 1, 1),
    # `<<-` strips leading tabs only: a space-indented delimiter ends nothing,
    # so the body runs to the end of the script (bash warns and agrees).
    ("cat <<-EOF > f\n  x\n  EOF\ncurl u", 1, 0, 1),
    ("cat <<-EOF > f\n\tx\n\tEOF\ncurl u", 2, 1, 1),
    # A backtick substitution inside "…" holds quotes of its own.
    ('echo "v=`printf "%s" "a; b"`; ok" && curl u', 2, 1, 0),
    # An escaped backtick inside backticks nests a substitution.
    ("echo `echo \\`echo a\\`` && curl u", 2, 1, 0),
    # "…" inside ${ … } may hold a "}".
    ('echo ${x:-"}"} && curl u', 2, 1, 0),
    # So may '…', outside double quotes and inside them.
    ("echo ${x:-'}'} && curl u", 2, 1, 0),
    ("echo \"${x:-'}'}\" && curl u", 2, 1, 0),
    ("x=; echo ${x:-'a}b'} && curl u", 3, 1, 0),
    ("echo ${x:-$'\\''} && curl u", 2, 1, 0),
    # `time --` ends time's options: the command is the next word.
    ("time -- curl u", 1, 1, 0),
    # A subshell followed by a redirection still runs its command.
    ("(curl u) &>/dev/null", 1, 1, 0),
    ("(curl u) {fd}>log", 1, 1, 0),
    # A function body runs when the function is called; its header hides
    # nothing, on one line as on several.
    ("get() { curl u; }; get", 3, 1, 0),
    ("get() {\n  curl u\n}\nget", 4, 1, 0),
    ("get () { curl u; }; get", 3, 1, 0),
    ("function get { curl u; }; get", 3, 1, 0),
    ("function get() (curl u); get", 2, 1, 0),
    ("function get () { curl u; }; get", 3, 1, 0),
    ("put() { sed -i s/a/b/ f; }; touch f; put", 4, 0, 1),
]


@pytest.mark.parametrize(("script", "segments", "network", "edits"), SCRIPTS)
def test_scan_counts_what_bash_runs(
    script: str, segments: int, network: int, edits: int, tmp_path: Path
) -> None:
    result = shell(script)
    assert (
        result["chainSegmentCount"],
        result["networkCommandCount"],
        result["editViaShellCount"],
    ) == (segments, network, edits)
    assert bash_curl_calls(script, tmp_path) == network
