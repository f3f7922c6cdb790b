"""Configuration reading (docs/configuration.md): sources, values, and precise errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.agents.command import CommandTemplateError, hook_path
from capeval.config import (
    MAX_TIMEOUT_S,
    Config,
    builtin_agents,
    config_from_table,
    is_timeout,
    load_config,
)
from capeval.core.agentconfig import AgentConfig, hook_problem
from capeval.core.problems import ProblemsError

BUILTINS = {"scripted", "claude-code", "codex", "gemini", "opencode"}
AGENT = '[agents.mine]\ntype = "command"\ncommand = "bin/agent {prompt}"\n'


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(root: Path, explicit: Path | None = None) -> list[str]:
    with pytest.raises(ProblemsError) as info:
        load_config(root, explicit)
    return [str(p) for p in info.value.problems]


def toml_problems(root: Path, text: str) -> list[str]:
    """The problems of `text` as the root's capeval.toml; [] when it loads."""
    (root / "capeval.toml").write_text(text)
    try:
        load_config(root)
    except ProblemsError as exc:
        return [str(p) for p in exc.problems]
    return []


# --- sources -------------------------------------------------------------------------


def test_no_configuration_gives_defaults_and_builtin_agents(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == Config.defaults(tmp_path)
    assert config.source is None
    assert set(config.agents) == BUILTINS
    assert config.agents["scripted"].type == "scripted"
    assert (config.repeats, config.concurrency, config.tiers) == (
        1,
        1,
        ("simple", "complex", "bait"),
    )
    assert (config.agent_timeout_s, config.verify_timeout_s) == (1200.0, 120.0)
    assert config.results_dir == tmp_path / "evals/capability/results"
    assert config.agent is None and config.baseline is None and config.max_turns is None


def test_capeval_toml_sets_every_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "capeval.toml",
        """
agent = "corbits"
matrix = ["openai:gpt-5", "fast=xai:grok-4@codex"]
provider = "openai"
model = "gpt-5"
repeats = 5
concurrency = 2
tiers = ["simple", "nightly"]
baseline = "evals/capability/results/baseline.json"
results = "out/results"
max_turns = 30

[timeouts]
agent = 600
verify = 30.5

[agents.corbits]
type = "command"
command = "corbits exec --cwd {workdir} --model {model} {prompt}"
args = ["--force"]
env = { CORBITS_HOME = "~/.corbits-eval" }
hook = ".corbits/hooks/eval-run-capture.sh"

[agents.sloppy]
type = "scripted"
trajectory = "sloppy"
""",
    )
    config = load_config(tmp_path)
    assert config.source == path
    assert config.agent == "corbits"
    assert config.matrix == ("openai:gpt-5", "fast=xai:grok-4@codex")
    assert (config.provider, config.model, config.repeats, config.concurrency) == (
        "openai",
        "gpt-5",
        5,
        2,
    )
    assert config.tiers == ("simple", "nightly")
    assert config.baseline == tmp_path / "evals/capability/results/baseline.json"
    assert config.results_dir == tmp_path / "out/results"
    assert config.max_turns == 30
    assert (config.agent_timeout_s, config.verify_timeout_s) == (600.0, 30.5)
    assert config.agents["corbits"] == AgentConfig(
        name="corbits",
        type="command",
        command="corbits exec --cwd {workdir} --model {model} {prompt}",
        args=("--force",),
        env={"CORBITS_HOME": "~/.corbits-eval"},
        hook=".corbits/hooks/eval-run-capture.sh",
    )
    assert config.agents["sloppy"] == AgentConfig(
        name="sloppy", type="scripted", trajectory="sloppy"
    )
    assert set(config.agents) >= BUILTINS


def test_matrix_as_a_comma_separated_string(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", 'matrix = "a:b, c:d ,,"\n')
    assert load_config(tmp_path).matrix == ("a:b", "c:d")


def test_pyproject_tool_table_is_used_without_capeval_toml(tmp_path: Path) -> None:
    path = write(
        tmp_path, "pyproject.toml", '[project]\nname = "x"\n\n[tool.capeval]\nrepeats = 3\n'
    )
    config = load_config(tmp_path)
    assert (config.repeats, config.source) == (3, path)


def test_capeval_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.capeval]\nrepeats = 3\n")
    write(tmp_path, "capeval.toml", "repeats = 7\n")
    assert load_config(tmp_path).repeats == 7


def test_pyproject_without_tool_table_means_defaults(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    assert load_config(tmp_path) == Config.defaults(tmp_path)


def test_explicit_config_file_is_used_instead_of_the_root_one(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", "repeats = 7\n")
    other = write(tmp_path, "ci.toml", "repeats = 2\n")
    assert load_config(tmp_path, other).repeats == 2


def test_explicit_pyproject_reads_its_tool_table(tmp_path: Path) -> None:
    other = tmp_path / "sub" / "pyproject.toml"
    other.parent.mkdir()
    other.write_text("[tool.capeval]\nconcurrency = 4\n")
    assert load_config(tmp_path, other).concurrency == 4


def test_explicit_pyproject_without_tool_table_is_an_error(tmp_path: Path) -> None:
    other = write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    assert problems(tmp_path, other) == [
        "pyproject.toml: tool.capeval: missing; add a [tool.capeval] table or pass a capeval.toml"
    ]


def test_explicit_config_that_does_not_exist(tmp_path: Path) -> None:
    (text,) = problems(tmp_path, tmp_path / "nope.toml")
    assert text.endswith("nope.toml: --config: no such file; pass a capeval.toml or pyproject.toml")


# --- agents --------------------------------------------------------------------------


def test_builtin_override_changes_only_the_keys_it_sets(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", '[agents.claude-code]\ncommand = "/opt/claude/bin/claude"\n')
    agent = load_config(tmp_path).agents["claude-code"]
    assert agent == AgentConfig(
        name="claude-code", type="claude-code", command="/opt/claude/bin/claude"
    )
    assert builtin_agents()["claude-code"].command is None  # the adapter's default binary


def test_unknown_agent_type_names_the_key_path(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", '[agents.old]\ntype = "shell"\ncommand = "x"\n')
    (text,) = problems(tmp_path)
    assert text.startswith(
        'capeval.toml: agents.old.type: unknown type "shell"; expected one of: scripted, command'
    )


def test_command_agent_needs_a_command(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", '[agents.corbits]\ntype = "command"\n')
    (text,) = problems(tmp_path)
    assert text.startswith(
        "capeval.toml: agents.corbits.command: missing; a command agent needs its command template"
    )


def test_a_mistyped_command_placeholder_is_named_with_the_fix(tmp_path: Path) -> None:
    # `{Prompt}` reached the agent as is: it never got the task, and every
    # repeat failed as if the agent had. Braces far from any placeholder
    # (awk's `{print}`, jq's `{name}`) pass through, as they may be meant.
    write(
        tmp_path,
        "capeval.toml",
        '[agents.mine]\ntype = "command"\n'
        'command = "bin/agent --cwd {workdir} --max {max-turns} ${HOME} {Prompt}"\n'
        'args = ["--model={modle}", "{provider}", "--filter", "{print}", "{name}"]\n',
    )
    texts = problems(tmp_path)
    assert texts == [
        "capeval.toml: agents.mine.command: unknown placeholder {max-turns} (did you mean "
        '"{max_turns}"?); expected one of: {workdir}, {prompt}, {provider}, {model}, {max_turns}, {hook}',
        "capeval.toml: agents.mine.command: unknown placeholder {Prompt} (did you mean "
        '"{prompt}"?); expected one of: {workdir}, {prompt}, {provider}, {model}, {max_turns}, {hook}',
        'capeval.toml: agents.mine.args: unknown placeholder {modle} (did you mean "{model}"?); '
        "expected one of: {workdir}, {prompt}, {provider}, {model}, {max_turns}, {hook}",
    ]


@pytest.mark.parametrize("hook", ["/tmp/x.sh", "../../../x.sh", "a/../../x.sh", ".", "./"])
def test_a_hook_outside_the_workdir_is_refused_by_validate_as_by_the_run(
    tmp_path: Path, hook: str
) -> None:
    (text,) = toml_problems(tmp_path, AGENT + f"hook = {json.dumps(hook)}\n")
    rule = hook_problem(hook)
    assert rule is not None
    assert text == f"capeval.toml: agents.mine.hook: {rule}"
    with pytest.raises(CommandTemplateError, match="must be relative to the workdir"):
        hook_path(tmp_path, hook)


def test_a_hook_inside_the_workdir_passes(tmp_path: Path) -> None:
    assert toml_problems(tmp_path, AGENT + 'hook = "hooks/capture.sh"\n') == []
    assert hook_path(tmp_path, "hooks/capture.sh") == tmp_path / "hooks" / "capture.sh"


def test_a_command_template_without_prompt_is_refused(tmp_path: Path) -> None:
    (text,) = toml_problems(
        tmp_path,
        '[agents.mine]\ntype = "command"\ncommand = "bin/agent --cwd {workdir}"\n'
        'args = ["--model", "{model}"]\n',
    )
    assert text.startswith(
        "capeval.toml: agents.mine.command: has no {prompt} placeholder, nor do its args"
    )
    assert "{prompt} is the only placeholder that carries it" in text


@pytest.mark.parametrize(
    "table",
    [
        'command = "bin/agent --prompt={prompt}"',
        'command = "bin/agent --cwd {workdir}"\nargs = ["--", "{prompt}"]',
    ],
)
def test_prompt_in_a_word_or_in_args_passes(tmp_path: Path, table: str) -> None:
    assert toml_problems(tmp_path, f'[agents.mine]\ntype = "command"\n{table}\n') == []


def test_a_misspelt_prompt_is_reported_once_as_the_near_miss(tmp_path: Path) -> None:
    (text,) = toml_problems(
        tmp_path, '[agents.mine]\ntype = "command"\ncommand = "agent {Prompt}"\n'
    )
    assert 'unknown placeholder {Prompt} (did you mean "{prompt}"?)' in text


@pytest.mark.parametrize("name", ["../../x", "sub/oracle", "..", "a\\\\b"])
def test_a_trajectory_name_with_a_path_is_refused(tmp_path: Path, name: str) -> None:
    (text,) = toml_problems(tmp_path, f'[agents.s]\ntype = "scripted"\ntrajectory = "{name}"\n')
    assert text.startswith("capeval.toml: agents.s.trajectory: trajectory name "), text
    assert "no '/', '\\' or '..'" in text


def test_new_agent_needs_a_type(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", '[agents.mine]\ncommand = "x"\n')
    (text,) = problems(tmp_path)
    assert text.startswith("capeval.toml: agents.mine.type: missing; add it: one of scripted")


def test_unknown_agent_key_is_reported_with_a_suggestion(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", '[agents.codex]\ncomand = "codex"\n')
    (text,) = problems(tmp_path)
    assert text.startswith("capeval.toml: agents.codex.comand: unknown field")
    assert 'did you mean "command"?' in text


def test_agent_env_values_must_be_strings(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", "[agents.codex.env]\nDEBUG = 1\n")
    (text,) = problems(tmp_path)
    assert text.startswith(
        "capeval.toml: agents.codex.env.DEBUG: expected a string value, got integer 1"
    )


def test_env_names_no_environment_can_hold_are_refused(tmp_path: Path) -> None:
    texts = toml_problems(
        tmp_path, AGENT + 'env = {"A B" = "1", "" = "x", "X=Y" = "z", "1A" = "2"}\n'
    )
    assert [t.split(": ")[1] for t in texts] == [
        'agents.mine.env."A B"',
        'agents.mine.env.""',
        'agents.mine.env."X=Y"',
        "agents.mine.env.1A",
    ]
    assert all("is no environment variable name; use letters, digits and '_'" in t for t in texts)


def test_a_nul_byte_in_an_env_value_is_refused(tmp_path: Path) -> None:
    # subprocess raised "embedded null byte" in every repeat.
    (text,) = toml_problems(tmp_path, '[agents.claude-code]\nenv = {A = "x\\u0000y"}\n')
    assert text.startswith("capeval.toml: agents.claude-code.env.A: the value holds a NUL byte")


def test_ordinary_env_names_and_values_pass(tmp_path: Path) -> None:
    assert (
        toml_problems(
            tmp_path, AGENT + 'env = {CORBITS_LOG = "debug", _x1 = "", path_ = "a b=c"}\n'
        )
        == []
    )


def test_default_agent_must_exist(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", 'agent = "corbits"\n')
    (text,) = problems(tmp_path)
    assert text.startswith('capeval.toml: agent: unknown agent "corbits"; expected one of: ')
    assert "or add an [agents.corbits] table" in text


def test_default_agent_may_be_a_configured_one(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", 'agent = "mine"\n[agents.mine]\ntype = "scripted"\n')
    assert load_config(tmp_path).agent == "mine"


# --- values --------------------------------------------------------------------------


def test_unknown_top_level_key_suggests_the_right_one(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", "repeat = 5\n")
    (text,) = problems(tmp_path)
    assert text.startswith("capeval.toml: repeat: unknown field; expected one of: agent, matrix")
    assert 'did you mean "repeats"?' in text


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        (
            'repeats = "3"',
            "repeats",
            'expected a positive integer, at most 1,000,000, got string "3"',
        ),
        ("repeats = 0", "repeats", "must be >= 1, got 0"),
        ("concurrency = 1.5", "concurrency", "expected a positive integer, got number 1.5"),
        (
            "max_turns = true",
            "max_turns",
            "expected a positive integer, at most 1,000,000, got boolean true",
        ),
        ("matrix = 3", "matrix", "expected a list of cells"),
        # An empty matrix silently ran the default agent instead.
        ("matrix = []", "matrix", "must not be empty"),
        ('matrix = ""', "matrix", 'matrix: "" is not allowed; expected a list of cells'),
        ('matrix = " , "', "matrix", "is not allowed; expected a list of cells"),
        ("tiers = []", "tiers", "must not be empty"),
        ('tiers = ["Simple"]', "tiers[0]", "is not allowed; expected a tier name"),
        ("baseline = 1", "baseline", "expected a result file path"),
        ("[timeouts]\nagent = 0", "timeouts.agent", "must be > 0, got 0"),
        ('[timeouts]\nverify = "2m"', "timeouts.verify", "expected a number of seconds > 0"),
        # inf crashed the run with a timer overflow; nan timed out every agent.
        ("[timeouts]\nagent = inf", "timeouts.agent", "got non-finite number Infinity"),
        ("[timeouts]\nverify = nan", "timeouts.verify", "got non-finite number NaN"),
        ("[timeouts]\nagent = 1e300", "timeouts.agent", "must be <= 2592000, got 1e+300"),
        (
            "[timeouts]\ngrader = 5",
            "timeouts.grader",
            "unknown field; expected one of: agent, verify",
        ),
    ],
)
def test_bad_values_name_file_key_path_and_fix(
    tmp_path: Path, line: str, field: str, words: str
) -> None:
    write(tmp_path, "capeval.toml", line + "\n")
    (text,) = problems(tmp_path)
    assert text.startswith(f"capeval.toml: {field}: "), text
    assert words in text


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("max_turns = 9223372036854775807", "max_turns"),
        ("max_turns = 1000001", "max_turns"),
        ("repeats = 9223372036854775807", "repeats"),
        ("repeats = 1000001", "repeats"),
    ],
)
def test_turn_budgets_and_repeats_past_the_bound_are_refused(
    tmp_path: Path, line: str, field: str
) -> None:
    (text,) = toml_problems(tmp_path, line + "\n")
    assert text.startswith(f"capeval.toml: {field}: must be <= 1000000"), text
    assert "at most 1,000,000" in text


def test_the_bounds_themselves_pass(tmp_path: Path) -> None:
    assert toml_problems(tmp_path, "max_turns = 1000000\nrepeats = 1000000\n") == []


def test_pyproject_problems_carry_the_tool_capeval_prefix(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.capeval]\nrepeats = 0\n[tool.capeval.agents.old]\ntype = "cmd"\n',
    )
    texts = problems(tmp_path)
    assert texts[0].startswith("pyproject.toml: tool.capeval.agents.old.type: unknown type")
    assert texts[1].startswith("pyproject.toml: tool.capeval.repeats: must be >= 1")


def test_invalid_toml_names_line_and_column(tmp_path: Path) -> None:
    write(tmp_path, "capeval.toml", "repeats = 1\nmatrix = [\n\n]]\n")
    (text,) = problems(tmp_path)
    assert text.startswith("capeval.toml: invalid TOML: ")
    assert "(at line 4, column 2)" in text


def test_every_problem_comes_back_at_once(tmp_path: Path) -> None:
    write(
        tmp_path,
        "capeval.toml",
        'agent = "ghost"\nrepeats = 0\ncolour = "red"\n[agents.a]\ntype = "command"\n[agents.b]\ntype = "nope"\n',
    )
    fields = sorted(t.split(": ")[1] for t in problems(tmp_path))
    assert fields == ["agent", "agents.a.command", "agents.b.type", "colour", "repeats"]


def test_config_from_table_is_usable_without_files(tmp_path: Path) -> None:
    config = config_from_table({"repeats": 2}, root=tmp_path)
    assert config.repeats == 2 and config.source is None
    with pytest.raises(ProblemsError, match=r"capeval\.toml: repeats: must be >= 1"):
        config_from_table({"repeats": 0}, root=tmp_path)


def test_a_relative_binary_path_is_the_workspaces(tmp_path: Path) -> None:
    # It named a file relative to wherever capeval was started (fails with --root).
    write(
        tmp_path,
        "capeval.toml",
        '[agents.mine]\ntype = "command"\ncommand = "bin/agent --prompt {prompt}"\n'
        '[agents.cc]\ntype = "claude-code"\ncommand = "tools/claude"\n'
        '[agents.onpath]\ntype = "command"\ncommand = "agent {prompt}"\n',
    )
    agents = load_config(tmp_path).agents
    assert agents["mine"].command == f"{tmp_path / 'bin/agent'} --prompt {{prompt}}"
    assert agents["cc"].command == str(tmp_path / "tools/claude")
    assert agents["onpath"].command == "agent {prompt}"  # a name on PATH stays a name


def test_a_command_template_that_does_not_split_is_a_problem_validate_sees(
    tmp_path: Path,
) -> None:
    # validate said ok and run then refused the template: one check for both.
    write(
        tmp_path,
        "capeval.toml",
        '[agents.a]\ntype = "command"\ncommand = "bin/agent \'{prompt}"\n'
        '[agents.b]\ntype = "command"\ncommand = "   "\n',
    )
    texts = problems(tmp_path)
    assert texts[0].startswith("capeval.toml: agents.a.command: does not split like a shell")
    assert texts[1] == (
        "capeval.toml: agents.b.command: is blank; a command agent needs its command template"
    )


def test_a_configuration_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_bytes(b'matrix = ["caf\xe9"]\n')
    (text,) = problems(tmp_path)
    assert text.startswith("capeval.toml: not UTF-8 text (byte 14")
    assert text.endswith("save it as UTF-8")


def test_a_command_starting_with_a_placeholder_is_not_anchored_to_the_root(
    tmp_path: Path,
) -> None:
    # `<root>/{workdir}/agent.sh` named no file: every repeat failed "not found".
    write(
        tmp_path,
        "capeval.toml",
        '[agents.mine]\ntype = "command"\ncommand = "{workdir}/agent.sh {prompt}"\n',
    )
    config = load_config(tmp_path)
    assert config.agents["mine"].command == "{workdir}/agent.sh {prompt}"


def test_skip_permissions_args_are_words_of_a_command_agents_template(tmp_path: Path) -> None:
    write(
        tmp_path,
        "capeval.toml",
        "[agents.corbits]\n"
        'type = "command"\n'
        'command = "corbits exec --dangerously-skip-permissions {prompt}"\n'
        'args = ["--force"]\n'
        'skip_permissions_args = ["--dangerously-skip-permissions", "--force"]\n'
        "[agents.claude-code]\n"
        'skip_permissions_args = ["--dangerously-skip-permissions"]\n',
    )
    (text,) = problems(tmp_path)  # the template and its args hold both words
    assert text.startswith(
        "capeval.toml: agents.claude-code.skip_permissions_args: only command agents take it"
    )
    write(
        tmp_path,
        "capeval.toml",
        '[agents.corbits]\ntype = "command"\ncommand = "corbits {prompt}"\n'
        'skip_permissions_args = ["--yolo"]\n',
    )
    assert problems(tmp_path) == [
        "capeval.toml: agents.corbits.skip_permissions_args: names '--yolo', not a word of the "
        "command template or args; list the words exactly as the template has them"
    ]


def test_a_configuration_saved_with_a_byte_order_mark_says_so(tmp_path: Path) -> None:
    # tomllib said "Invalid statement (at line 1, column 1)" of a file that
    # looks right in every editor.
    (tmp_path / "capeval.toml").write_bytes(b"\xef\xbb\xbfrepeats = 2\n")
    (text,) = problems(tmp_path)
    assert text == (
        "capeval.toml: starts with a byte order mark (BOM), which TOML does not allow; "
        "save the file as UTF-8 without BOM"
    )


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        (0, False),
        (0.0, False),
        (-1, False),
        (0.001, True),
        (MAX_TIMEOUT_S, True),
        (MAX_TIMEOUT_S + 1, False),
        (float("inf"), False),
        (float("nan"), False),
        (True, False),
    ],
)
def test_a_usable_timeout_is_positive_finite_and_at_most_30_days(
    value: float, usable: bool
) -> None:
    # `--agent-timeout 0` would time every agent out before it starts.
    assert is_timeout(value) is usable


def test_a_tier_listed_twice_is_named_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text('tiers = ["simple", "bait", "simple"]\n')
    with pytest.raises(ProblemsError) as info:
        load_config(tmp_path)
    assert [str(p) for p in info.value.problems] == [
        'capeval.toml: tiers: lists "simple" more than once; keep each once'
    ]


def test_an_upper_case_placeholder_is_named(tmp_path: Path) -> None:
    # `{WORKDIR}` reached the agent as is, like any other misspelling.
    texts = toml_problems(
        tmp_path, '[agents.mine]\ntype = "command"\ncommand = "agent --cwd {WORKDIR} {prompt}"\n'
    )
    assert len(texts) == 1
    assert texts[0].startswith(
        'capeval.toml: agents.mine.command: unknown placeholder {WORKDIR} (did you mean "{workdir}"?)'
    )


def test_a_shell_variable_is_no_placeholder(tmp_path: Path) -> None:
    # `${WORKDIR}` is for the shell the template starts, not a misspelt `{workdir}`.
    assert (
        toml_problems(
            tmp_path,
            '[agents.mine]\ntype = "command"\n'
            "command = \"sh -c 'cd ${WORKDIR} && agent {prompt}'\"\n",
        )
        == []
    )


def test_a_timeouts_table_with_one_key_keeps_the_other_default(tmp_path: Path) -> None:
    # docs/configuration.md#keys: agent 20 minutes, verify 2 minutes, unless configured.
    (tmp_path / "capeval.toml").write_text("[timeouts]\nagent = 60\n")
    config = load_config(tmp_path)
    assert (config.agent_timeout_s, config.verify_timeout_s) == (60.0, 120.0)
    (tmp_path / "capeval.toml").write_text("[timeouts]\nverify = 5\n")
    config = load_config(tmp_path)
    assert (config.agent_timeout_s, config.verify_timeout_s) == (1200.0, 5.0)


def test_a_home_relative_binary_is_not_anchored_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "capeval.toml").write_text(
        '[agents.mine]\ntype = "command"\ncommand = "~/bin/agent {prompt}"\n'
    )
    assert load_config(tmp_path).agents["mine"].command == "~/bin/agent {prompt}"


def test_ray_resources_and_num_cpus_are_read_and_checked(tmp_path: Path) -> None:
    table = '[agents.capped]\ntype = "scripted"\ntrajectory = "oracle"\n'
    write(tmp_path, "capeval.toml", table + "ray_resources = {claude_slots = 1}\nnum_cpus = 0.5\n")
    agent = load_config(tmp_path).agents["capped"]
    assert dict(agent.ray_resources) == {"claude_slots": 1.0} and agent.num_cpus == 0.5
    assert dict(load_config(tmp_path).agents["scripted"].ray_resources) == {}
    (zero,) = toml_problems(tmp_path, table + "ray_resources = {claude_slots = 0}\n")
    assert "agents.capped.ray_resources.claude_slots: must be > 0, got 0" in zero
    (negative,) = toml_problems(tmp_path, table + "num_cpus = -1\n")
    assert "agents.capped.num_cpus" in negative
