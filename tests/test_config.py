"""The configuration file: the contract's example loads as written; everything else that is
wrong is one error naming the key; without a file, the built-in demo team."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from bot.config import Config, load_config
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
