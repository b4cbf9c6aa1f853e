"""The configuration file: the contract's example loads as written; everything else that is
wrong is one error naming the key; without a file, the built-in demo team."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config, load_config
from bot.config.values import checked_url, url_problem
from bot.errors import ConfigError

# Copied verbatim from the contract's configuration example: it must load as written.
DESIGN_EXAMPLE = r"""
profile = "cpython"              # built-in profile: roles, expected files, signers
state = "relbot-data/state.db"   # SQLite file, created if missing
poll_interval = 30               # seconds between staging scans
confirm_timeout = 600            # seconds a confirmation code stays valid

[storage]                        # where the files are
kind = "local"                   # "local" (a folder on this machine) or "sftp"
staging = "relbot-data/staging"  # one folder per tag: staging/3.14.1/ (docs in staging/3.14.1/docs/)
public = "relbot-data/public"    # artifacts go to public/X.Y.Z/, docs to public/doc/TAG/
# kind = "sftp": host, port = 22, user, key_file, known_hosts (key_file and known_hosts are
#   required); staging and public are then absolute paths on the server

[signatures]
require = false                  # true: every required file needs a valid FILE.sigstore
# trusted_root = "production"    # "production", "staging", or a path to a trusted_root.json
# identities = { "3.14" = ["hugo@python.org", "https://github.com/login/oauth"] }  # per branch: [identity, issuer]; overrides the profile

[pydotorg]
kind = "none"                    # "none" or "api"
# url = "https://www.python.org/api/v1/", auth_env = "PYDOTORG_AUTH" ("user:apikey")

# [slack]                        # optional (a platform is on when its table is present); tokens only from the environment
# bot_token_env = "SLACK_BOT_TOKEN", channel = "C0123456789"
# mode = "socket" (app_token_env = "SLACK_APP_TOKEN") or "http" (signing_secret_env, port; events at /slack/events)
# api_url = "https://slack.com/api/"   # only changed for tests
# [discord]                      # optional
# token_env = "DISCORD_TOKEN", guild = 123, channel = 456
# api_url = "https://discord.com/api/v10"  # only changed for tests

# [health]                       # optional: GET /healthz and /metrics (Prometheus text) on 127.0.0.1
# port = 9110

[people.hugo]
rm = ["3.14", "3.15"]            # release manager of these branches
roles = ["source", "docs"]
slack = "U01ABCDEF"              # platform user IDs, never display names
discord = "112233445566778899"

[people.steve]
roles = ["windows"]

[people.ned]
roles = ["macos"]
"""  # noqa: E501


def write(folder: Path, text: str, name: str = "relbot.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_of(folder: Path, text: str) -> str:
    path = write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, cwd=folder)
    return str(caught.value)


# -- the example ------------------------------------------------------------------------------


def test_the_config_example_of_the_design_loads_as_written(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, DESIGN_EXAMPLE), cwd=tmp_path)

    model = config.model
    assert config.profile.name == "cpython"
    assert (model.poll_interval, model.confirm_timeout) == (30, 600)
    assert model.storage.kind == "local"
    assert model.signatures.require is False
    assert model.pydotorg.kind == "none"
    assert config.platforms() == []
    assert list(config.people) == ["hugo", "steve", "ned"]
    hugo = config.people["hugo"]
    assert hugo.rm == ["3.14", "3.15"]
    assert hugo.roles == ["source", "docs"]
    assert (hugo.slack, hugo.discord) == ("U01ABCDEF", "112233445566778899")
    assert config.people["steve"].roles == ["windows"]
    assert config.people["ned"].roles == ["macos"]


def test_relative_paths_resolve_against_the_config_files_folder(tmp_path: Path) -> None:
    path = write(tmp_path / "conf", DESIGN_EXAMPLE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    config = load_config(path, cwd=elsewhere)

    folder = path.resolve().parent
    assert config.state_path == folder / "relbot-data" / "state.db"
    assert config.path(config.model.storage.staging) == folder / "relbot-data" / "staging"
    assert config.path(config.model.storage.public) == folder / "relbot-data" / "public"


def test_a_config_given_by_a_relative_path_resolves_against_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "conf", DESIGN_EXAMPLE)
    monkeypatch.chdir(tmp_path)

    config = load_config(Path("conf/relbot.toml"))

    assert config.state_path.is_absolute()
    assert config.state_path == (tmp_path / "conf" / "relbot-data" / "state.db").resolve()


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    state = tmp_path / "var" / "relbot.db"

    config = load_config(write(tmp_path / "conf", f'state = "{state}"\n'), cwd=tmp_path)

    assert config.state_path == state


# -- one error naming the key -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("pol_interval = 30\n", "pol_interval"),
        ('[storage]\nkind = "local"\nstagin = "s"\n', "storage.stagin"),
        ('[people.ned]\nroles = ["macos"]\nslak = "U1"\n', "people.ned.slak"),
        ("[signatures]\nrequire = false\nrequired = true\n", "signatures.required"),
        ('[telegram]\ntoken_env = "T"\n', "telegram"),
    ],
)
def test_an_unknown_key_is_one_error_naming_it(tmp_path: Path, text: str, key: str) -> None:
    message = error_of(tmp_path, text)

    assert f"{key}: unknown key" in message
    assert "relbot.toml" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('poll_interval = "often"\n', "poll_interval"),
        ("confirm_timeout = 1.5\n", "confirm_timeout"),
        ('[storage]\nkind = "ftp"\n', "storage.kind"),
        ('[storage]\nport = "ssh"\n', "storage.port"),
        ('[signatures]\nrequire = "maybe"\n', "signatures.require"),
        ('[people.ned]\nroles = "macos"\n', "people.ned.roles"),
        ('[people.hugo]\nrm = ["3.14.1"]\n', "people.hugo.rm"),
        ('storage = "local"\n', "storage"),
    ],
)
def test_a_wrong_type_is_one_error_naming_the_key(tmp_path: Path, text: str, key: str) -> None:
    message = error_of(tmp_path, text)

    assert f": {key}: " in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('poll_interval = "30"\n', "poll_interval"),
        ('[signatures]\nrequire = "yes"\n', "signatures.require"),
        ("[storage]\nport = 22.0\n", "storage.port"),
    ],
)
def test_a_value_of_the_wrong_toml_type_is_refused_even_if_convertible(
    tmp_path: Path, text: str, key: str
) -> None:
    assert f": {key}: " in error_of(tmp_path, text)


def test_a_role_the_profile_does_not_know_is_one_error_naming_the_key(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[people.ned]\nroles = ["macos", "linux"]\n')

    assert "people.ned.roles" in message
    assert "'linux'" in message
    assert "source, docs, windows, macos" in message
    assert "\n" not in message


@pytest.mark.parametrize("missing", ["host", "user", "key_file", "known_hosts"])
def test_sftp_storage_without_a_connection_setting_is_one_error_naming_it(
    tmp_path: Path, missing: str
) -> None:
    settings = {
        "host": '"downloads.example.org"',
        "user": '"hugo"',
        "key_file": '"id_ed25519"',
        "known_hosts": '"known_hosts"',
    }
    lines = [f"{k} = {v}" for k, v in settings.items() if k != missing]
    text = '[storage]\nkind = "sftp"\nstaging = "/srv/staging"\n' + "\n".join(lines) + "\n"

    message = error_of(tmp_path, text)

    assert f"storage.{missing}" in message
    assert "\n" not in message


def test_a_config_that_is_not_toml_is_refused_naming_the_file(tmp_path: Path) -> None:
    message = error_of(tmp_path, "profile = cpython\n")

    assert "relbot.toml" in message
    assert "TOML" in message


def test_an_unknown_profile_is_refused_naming_it(tmp_path: Path) -> None:
    assert "'cpyhton'" in error_of(tmp_path, 'profile = "cpyhton"\n')


def test_a_profile_file_is_found_relative_to_the_config(tmp_path: Path) -> None:
    write(
        tmp_path / "conf",
        """
        name = "widget"
        [roles.build]
        required = [{ name = "widget-{tag}.tar.gz" }]
        """,
        name="widget.toml",
    )
    path = write(tmp_path / "conf", 'profile = "widget.toml"\n[people.ann]\nroles = ["build"]\n')

    config = load_config(path, cwd=tmp_path)

    assert config.profile.roles == ("build",)


# -- without a file ---------------------------------------------------------------------------


def test_without_a_config_file_the_built_in_demo_team_is_used(tmp_path: Path) -> None:
    config = load_config(cwd=tmp_path)

    assert config.origin == "built-in default"
    assert list(config.people) == ["hugo", "steve", "ned"]  # hugo, the RM, speaks first
    assert config.people["hugo"].rm == ["3.14", "3.15"]
    assert config.people["hugo"].roles == ["source", "docs"]
    assert config.people["steve"].roles == ["windows"]
    assert config.people["ned"].roles == ["macos"]
    assert config.model.storage.kind == "local"
    assert config.state_path == tmp_path / "relbot-data" / "state.db"
    assert config.platforms() == []


def test_relbot_toml_in_the_working_folder_is_picked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, '[people.alice]\nrm = ["3.14"]\n')
    monkeypatch.chdir(tmp_path)

    config = load_config()

    assert list(config.people) == ["alice"]
    assert config.origin.endswith("relbot.toml")


def test_a_config_named_explicitly_but_missing_is_an_error_not_the_default(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.toml", cwd=tmp_path)

    assert "nope.toml" in str(caught.value)


# -- secrets ----------------------------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return load_config(cwd=tmp_path)


def test_a_missing_secret_names_the_key_and_the_variable(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RELBOT_TEST_AUTH", raising=False)

    with pytest.raises(ConfigError) as caught:
        config.secret("pydotorg.auth_env", "RELBOT_TEST_AUTH")

    assert str(caught.value) == (
        "pydotorg.auth_env: the environment variable RELBOT_TEST_AUTH is not set."
    )


def test_an_empty_secret_counts_as_unset(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELBOT_TEST_AUTH", "")

    with pytest.raises(ConfigError, match="RELBOT_TEST_AUTH"):
        config.secret("pydotorg.auth_env", "RELBOT_TEST_AUTH")


def test_a_secret_is_read_from_the_environment_and_never_printed(
    config: Config, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELBOT_TEST_AUTH", "hugo:0123456789abcdef")

    assert config.secret("pydotorg.auth_env", "RELBOT_TEST_AUTH") == "hugo:0123456789abcdef"

    out, err = capsys.readouterr()
    assert "0123456789abcdef" not in out + err
    assert os.environ["RELBOT_TEST_AUTH"] == "hugo:0123456789abcdef"  # read, not consumed


# -- bounds, addresses, names and IDs: refused where written ----------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("poll_interval = 1000000000000000000\n", "poll_interval"),
        ("poll_interval = 0\n", "poll_interval"),
        ("confirm_timeout = 9223372036854775807\n", "confirm_timeout"),
        ("confirm_timeout = 86401\n", "confirm_timeout"),
        ("[storage]\nport = 0\n", "storage.port"),
        ("[storage]\nport = 65536\n", "storage.port"),
        ('[slack]\nchannel = "C0RELEASE"\nport = 99999999999999999999\n', "slack.port"),
        ("[health]\nport = -1\n", "health.port"),
    ],
)
def test_every_number_has_bounds(tmp_path: Path, text: str, key: str) -> None:
    message = error_of(tmp_path, text)

    assert f": {key}: " in message
    assert "\n" not in message


def test_the_largest_numbers_allowed_load(tmp_path: Path) -> None:
    path = write(
        tmp_path, "poll_interval = 86400\nconfirm_timeout = 86400\n[health]\nport = 65535\n"
    )

    model = load_config(path).model

    assert (model.poll_interval, model.confirm_timeout) == (86400, 86400)


@pytest.mark.parametrize(
    ("text", "key", "why"),
    [
        ('[pydotorg]\nurl = "http://www.python.org/api/v1/"\n', "pydotorg.url", "clear text"),
        ('[pydotorg]\nurl = "file:///etc/passwd"\n', "pydotorg.url", "not an https:// URL"),
        ('[pydotorg]\nurl = "ftp://www.python.org/"\n', "pydotorg.url", "not an https:// URL"),
        ('[pydotorg]\nurl = "https://"\n', "pydotorg.url", "names no host"),
        ('[pydotorg]\nurl = "https://rm:key@www.python.org/"\n', "pydotorg.url", "password"),
        ('[pydotorg]\nurl = "www.python.org/api/v1/"\n', "pydotorg.url", "not an https:// URL"),
        (
            '[slack]\nchannel = "C0RELEASE"\napi_url = "http://slack.example/api/"\n',
            "slack.api_url",
            "clear text",
        ),
        (
            "[discord]\nguild = 112233445566778899\nchannel = 112233445566778890\n"
            'api_url = "http://10.0.0.1/api/v10"\n',
            "discord.api_url",
            "clear text",
        ),
        ('release_cycle = "file:///etc/passwd"\n', "release_cycle", "not an https:// URL"),
        ('release_cycle = "http://peps.python.org/x.json"\n', "release_cycle", "clear text"),
    ],
)
def test_an_api_url_must_be_https_unless_it_is_this_machine(
    tmp_path: Path, text: str, key: str, why: str
) -> None:
    message = error_of(tmp_path, text)

    assert f": {key}: " in message and why in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/api/v1/", "http://[::1]:8000/api/", "http://localhost/api/"]
)
def test_plain_http_to_this_machine_is_allowed_for_tests(tmp_path: Path, url: str) -> None:
    config = load_config(write(tmp_path, f'[pydotorg]\nurl = "{url}"\n'))

    assert config.model.pydotorg.url == url


def test_the_url_rule_is_one_function_other_tables_can_use() -> None:
    assert url_problem("https://discuss.python.org/") == ""
    assert "clear text" in url_problem("http://discuss.python.org/")
    assert url_problem("http://127.0.0.2:9/") == ""
    with pytest.raises(ValueError, match="not an https:// URL"):
        checked_url("gopher://x/")


@pytest.mark.parametrize("host", ["", "0", "127.1", "0000::", "0:0::0", "bad_host", "*", "a b"])
def test_a_health_host_that_is_not_an_address_or_means_every_interface_is_refused(
    tmp_path: Path, host: str
) -> None:
    message = error_of(tmp_path, f'[health]\nhost = "{host}"\n')

    assert ": health.host: " in message
    assert "0.0.0.0 or ::" in message


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "127.0.0.1", "::1", "localhost", "board.lan"])
def test_every_interface_only_when_written_as_such(tmp_path: Path, host: str) -> None:
    config = load_config(write(tmp_path, f'[health]\nhost = "{host}"\n'))

    assert config.model.health is not None and config.model.health.host == host


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[people.""]\nrm = ["3.14"]\n', "name is empty"),
        ('[people." "]\nrm = ["3.14"]\n', "name is empty"),
        ('[people.relbot]\nrm = ["3.14"]\n', "the bot itself"),
        ('[people.RelBot]\nrm = ["3.14"]\n', "the bot itself"),
        ('[people."hugo vk"]\nrm = ["3.14"]\n', "one word"),
        ('[people."hugo\\u202e"]\nrm = ["3.14"]\n', "control character"),
    ],
)
def test_a_person_name_must_be_a_word_that_is_not_the_bot(
    tmp_path: Path, text: str, fragment: str
) -> None:
    message = error_of(tmp_path, text)

    assert ": people: " in message and fragment in message
    assert "\n" not in message


@pytest.mark.parametrize("platform", ["slack", "discord"])
def test_one_platform_id_for_two_people_is_refused_naming_both(
    tmp_path: Path, platform: str
) -> None:
    user = "U01ABCDEF" if platform == "slack" else "112233445566778899"
    text = f'[people.hugo]\n{platform} = "{user}"\n[people.eve]\n{platform} = "{user}"\n'

    message = error_of(tmp_path, text)

    assert f"people.eve.{platform}: '{user}' is already people.hugo.{platform}" in message


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[people.hugo]\nslack = "hugo"\n', "people.hugo.slack"),
        ('[people.hugo]\nslack = "@hugo"\n', "people.hugo.slack"),
        ('[people.hugo]\nslack = "u01abcdef"\n', "people.hugo.slack"),
        ('[people.hugo]\nslack = "C0123456789"\n', "people.hugo.slack"),
        ('[people.hugo]\nslack = ""\n', "people.hugo.slack"),
        ('[people.hugo]\ndiscord = "123"\n', "people.hugo.discord"),
        ('[people.hugo]\ndiscord = "hugo#1234"\n', "people.hugo.discord"),
        ('[people.hugo]\ndiscord = "112233445566778899000"\n', "people.hugo.discord"),
        ('[slack]\nchannel = "#release"\n', "slack.channel"),
        ('[slack]\nchannel = "U01ABCDEF"\n', "slack.channel"),
        ("[discord]\nguild = 1\nchannel = 112233445566778899\n", "discord.guild"),
        ("[discord]\nguild = 112233445566778899\nchannel = 2\n", "discord.channel"),
    ],
)
def test_platform_ids_have_the_platforms_format(tmp_path: Path, text: str, key: str) -> None:
    message = error_of(tmp_path, text)

    assert f": {key}: " in message and " ID" in message
    assert "\n" not in message


def test_control_characters_in_identities_are_refused(tmp_path: Path) -> None:
    text = '[signatures]\nidentities = { "3.14" = ["hugo\\u001b[2J@python.org", "https://x"] }\n'

    message = error_of(tmp_path, text)

    assert ": signatures.identities: " in message and "control character" in message
    assert "\x1b" not in message  # the refusal shows it escaped


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f'state = "{"s" * 300}/state.db"\n', "state"),
        (f'[storage]\nstaging = "data/{"x" * 300}"\n', "storage.staging"),
        (f'[storage]\npublic = "/{"p" * 256}"\n', "storage.public"),
        (f'release_cycle = "{"r" * 300}.json"\n', "release_cycle"),
        (f'[signatures]\ntrusted_root = "{"t" * 300}.json"\n', "signatures.trusted_root"),
        (f'profile = "{"q" * 300}.toml"\n', "profile"),
        ('state = ""\n', "state"),
        ('state = "~no-such-user-here/state.db"\n', "state"),
    ],
)
def test_a_path_the_filesystem_cannot_take_is_one_error_naming_the_key(
    tmp_path: Path, text: str, key: str
) -> None:
    message = error_of(tmp_path, text)

    assert f": {key}: " in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize("where", ["data/public/state.db", "data/staging/db/state.db"])
def test_a_state_file_inside_staging_or_public_is_refused(tmp_path: Path, where: str) -> None:
    text = f'state = "{where}"\n[storage]\nstaging = "data/staging"\npublic = "data/public"\n'

    message = error_of(tmp_path, text)

    assert ": state: " in message and "outside both folders" in message


def test_a_state_file_beside_staging_and_public_is_fine(tmp_path: Path) -> None:
    text = 'state = "data/state.db"\n[storage]\nstaging = "data/staging"\npublic = "data/public"\n'

    assert load_config(write(tmp_path, text)).state_path == tmp_path / "data" / "state.db"


# -- the config file itself -------------------------------------------------------------------


def test_a_folder_named_relbot_toml_is_an_error_not_the_demo(tmp_path: Path) -> None:
    (tmp_path / "relbot.toml").mkdir()

    with pytest.raises(ConfigError, match=r"relbot\.toml: the config is a folder"):
        load_config(cwd=tmp_path)


def test_a_broken_link_named_relbot_toml_is_an_error_not_the_demo(tmp_path: Path) -> None:
    (tmp_path / "relbot.toml").symlink_to(tmp_path / "gone.toml")

    with pytest.raises(ConfigError, match=r"relbot\.toml: the config cannot be read"):
        load_config(cwd=tmp_path)


def test_a_link_to_a_config_file_is_followed(tmp_path: Path) -> None:
    real = write(tmp_path / "etc", '[people.ann]\nrm = ["3.14"]\n')
    (tmp_path / "relbot.toml").symlink_to(real)

    assert list(load_config(cwd=tmp_path).people) == ["ann"]


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: os.mkfifo(p), "FIFO"),
        (lambda p: p.symlink_to("/dev/zero"), "device"),
        (lambda p: p.mkdir(), "folder"),
        (lambda p: p.write_bytes(b"#" * (2 << 20)), "larger than 1 MiB"),
    ],
    ids=["fifo", "dev-zero", "folder", "too-large"],
)
def test_a_config_that_is_not_a_small_regular_file_is_refused_before_it_is_read(
    tmp_path: Path, make: Any, fragment: str
) -> None:
    path = tmp_path / "relbot.toml"
    make(path)

    with pytest.raises(ConfigError) as caught:
        load_config(path)  # a FIFO would block here for ever, /dev/zero never end

    assert fragment in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: os.mkfifo(p), "FIFO"),
        (lambda p: p.symlink_to("/dev/zero"), "device"),
        (lambda p: p.mkdir(), "folder"),
        (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ],
    ids=["fifo", "dev-zero", "folder", "deep-json"],
)
def test_a_release_cycle_file_that_is_not_a_json_file_is_one_error(
    tmp_path: Path, make: Any, fragment: str
) -> None:
    make(tmp_path / "cycle.json")

    message = error_of(tmp_path, 'release_cycle = "cycle.json"\n')

    assert message.startswith("release_cycle: ") and fragment in message


def test_a_deeply_nested_config_is_one_sentence(tmp_path: Path) -> None:
    message = error_of(tmp_path, "x = " + "[" * 100_000 + "]" * 100_000 + "\n")

    assert "nested too deeply" in message and "\n" not in message


def test_a_deeply_nested_profile_is_one_sentence(tmp_path: Path) -> None:
    write(tmp_path, "x = " + "[" * 100_000 + "]" * 100_000 + "\n", name="deep.toml")

    assert "nested too deeply" in error_of(tmp_path, 'profile = "deep.toml"\n')


def test_cdn_purge_urls_follow_the_url_rule(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[cdn]\npurge = ["http://www.python.org/ftp/python/{version}/"]\n')

    assert ": cdn.purge.0: " in message and "clear text" in message


def test_the_name_no_person_may_have_is_the_bots_own_actor() -> None:
    from bot.config import BOT_ACTOR
    from bot.service.pipeline.steps import BOT

    assert BOT_ACTOR == BOT
