"""The announcement's tables in the config, and `relbot check` reaching what they name."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bot.config import load_config
from bot.errors import ConfigError
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble
from tests.pinned import RELEASE_CYCLE_LINE
from tests.test_check_report import check, reported

PEOPLE = '\n[people.hugo]\nrm = ["3.14"]\n'


def config(folder: Path, tables: str) -> Path:
    path = folder / "relbot.toml"
    path.write_text(RELEASE_CYCLE_LINE + textwrap.dedent(tables) + PEOPLE, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "tables",
    [
        '[downloads]\nurl = "http://www.python.org/ftp/python/"',
        '[discourse]\nurl = "http://discuss.python.org/"\nusername = "hugo"',
        '[discourse]\nurl = "ftp://127.0.0.1/"\nusername = "hugo"',
    ],
)
def test_urls_must_be_https_except_on_this_machine(tmp_path: Path, tables: str) -> None:
    with pytest.raises(ConfigError, match="must be an https:// URL"):
        load_config(config(tmp_path, tables))


def test_the_defaults_are_python_org_s(tmp_path: Path) -> None:
    loaded = load_config(config(tmp_path, '[downloads]\n[discourse]\nusername = "hugo"\n'))

    assert loaded.model.downloads is not None and loaded.model.discourse is not None
    assert loaded.model.downloads.url == "https://www.python.org/ftp/python/"
    discourse = loaded.model.discourse
    assert (discourse.url, discourse.category, discourse.tags) == (
        "https://discuss.python.org/",
        23,
        ["release"],
    )
    local = load_config(config(tmp_path, '[downloads]\nurl = "http://127.0.0.1:8000/ftp"\n'))
    assert local.model.downloads is not None
    assert local.model.downloads.url == "http://127.0.0.1:8000/ftp/"


def test_a_release_page_needs_the_release_database(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='release_page needs kind = "api"'):
        load_config(config(tmp_path, "[pydotorg]\nrelease_page = true\n"))


def test_a_template_is_checked_when_the_config_loads(tmp_path: Path) -> None:
    (tmp_path / "frame.md").write_text("{words}\n\n{highlights}\n", encoding="utf-8")
    tables = '[discourse]\nusername = "hugo"\ntemplate = "frame.md"\n'

    with pytest.raises(ConfigError, match=r"unknown placeholders \{highlights\}"):
        load_config(config(tmp_path, tables))
    (tmp_path / "frame.md").unlink()
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(config(tmp_path, tables))
    per_branch = '[discourse]\nusername = "hugo"\ntemplate = "frames/{branch}.md"\n'
    load_config(config(tmp_path, per_branch))  # read when a release of a branch is drafted


def test_relbot_check_reaches_the_site_python_org_v2_and_the_forum(tmp_path: Path) -> None:
    (tmp_path / "relbot-data" / "staging").mkdir(parents=True)
    (tmp_path / "relbot-data" / "public").mkdir(parents=True)
    with (
        PydotorgDouble(tokens={"rm": ("good-token", True)}) as api,
        DiscourseDouble(users={"hugo": "good-key"}) as forum,
        PublicSite(tmp_path / "relbot-data" / "public") as site,
    ):
        config(
            tmp_path,
            f"""
            [pydotorg]
            kind = "api"
            url = "{api.url}"
            auth_env = "TEST_AUTH"
            release_page = true
            token_env = "TEST_TOKEN"

            [downloads]
            url = "{site.url}"

            [discourse]
            url = "{forum.url}"
            api_key_env = "TEST_FORUM_KEY"
            username = "hugo"
            """,
        )
        unset = check(tmp_path, "--offline", TEST_AUTH="rm:key")
        good = check(
            tmp_path, TEST_AUTH="rm:key", TEST_TOKEN="good-token", TEST_FORUM_KEY="good-key"
        )
        wrong = check(
            tmp_path, TEST_AUTH="rm:key", TEST_TOKEN="bad-token", TEST_FORUM_KEY="bad-key"
        )

    assert unset.returncode == 1
    assert [p.split(":")[0] for p in reported(unset)] == [
        "pydotorg.token_env",
        "discourse.api_key_env",
    ]
    assert good.returncode == 0, good.stderr
    problems = reported(wrong)
    assert wrong.returncode == 1 and len(problems) == 2, wrong.stderr
    assert problems[0].startswith("pydotorg.token_env: python.org refused the API v2 token")
    assert problems[1].startswith("discourse: 127.0.0.1 refused the key")
    assert "bad-token" not in wrong.stderr + wrong.stdout
    assert "bad-key" not in wrong.stderr + wrong.stdout
