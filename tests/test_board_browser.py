"""The release board in a real headless browser (Debian's chromium, driven by chromedriver)
during a console rehearsal with ``[health]`` on: one page is opened once and kept open while the
team types; what a person sees must follow each step by itself, up to the published release
with its links.

Screenshots are kept in ``test-artifacts/`` at the root of the project (ignored by git).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from bot.demo import stage_demo
from bot.domain.profile import load_profile
from tests.pinned import NO_SIGNATURES

RELBOT = Path(sys.executable).with_name("relbot")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
HOSTILE = '"><img src=x onerror=alert(1)>.tgz'
PATIENCE = 30  # seconds a step may take to show on a loaded machine (one scan is 1 s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    assert os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER), (
        "the browser tests need Debian's chromium and chromium-driver: make test installs them"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1280,1600",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


class Rehearsal:
    """``relbot run`` on the console, typed into line by line; its output goes to a file."""

    def __init__(self, cwd: Path, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.output = cwd / "console.out"
        self._out = self.output.open("w")
        self.bot = subprocess.Popen(
            [str(RELBOT), "run"], cwd=cwd, stdin=subprocess.PIPE, stdout=self._out,
            stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip

    def type(self, *lines: str) -> None:
        assert self.bot.stdin is not None
        self.bot.stdin.write("".join(line + "\n" for line in lines))
        self.bot.stdin.flush()

    def wait_for_output(self, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            if match := re.search(pattern, self.output.read_text()):
                return match
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} in:\n{self.output.read_text()}")

    def release(self, tag: str) -> dict[str, Any]:
        status, data = get_json(f"{self.base}/api/releases/{tag}")
        assert status == 200, data
        return data

    def finish(self) -> int:
        assert self.bot.stdin is not None
        self.bot.stdin.close()
        code = self.bot.wait(timeout=60)
        self._out.close()
        return code

    def kill(self) -> None:
        if self.bot.poll() is None:
            self.bot.kill()
            self.bot.wait()
        self._out.close()


def until(driver: webdriver.Chrome, what: str, check: Callable[[webdriver.Chrome], bool]) -> None:
    try:
        WebDriverWait(driver, PATIENCE, poll_frequency=0.2).until(check)
    except TimeoutException as err:
        text = text_of(driver, "board")
        raise AssertionError(f"the page never showed {what}; it shows:\n{text}") from err


def role_row(driver: webdriver.Chrome, role: str) -> str:
    """The text of ``role``'s row in the Roles table, as a person reads it (read in one
    script, so the page's own updates cannot swap the row out halfway)."""
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('#roles tbody tr'), r => r.innerText)"
    )
    words = [str(row).split() for row in rows]  # cells are tab-separated in innerText
    return next((" ".join(w) for w in words if w and w[0] == role), "")


def hashes(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    """Each SHA-256 on the page: its text, its title, and its width shown and whole (px)."""
    found = driver.execute_script(
        "return Array.from(document.querySelectorAll('#files code.sha'), c => ({text: "
        "c.textContent, title: c.title, shown: c.clientWidth, whole: c.scrollWidth}))"
    )
    return list(found)


def column(driver: webdriver.Chrome, ident: str, name: str) -> list[str]:
    """The texts of the column headed ``name`` in the table inside ``ident``."""
    cells = driver.execute_script(
        "var t = document.getElementById(arguments[0]).querySelector('table');"
        "var i = Array.from(t.tHead.rows[0].cells, c => c.innerText).indexOf(arguments[1]);"
        "return Array.from(t.tBodies[0].rows, r => r.cells[i].innerText)",
        ident,
        name,
    )
    return [str(cell) for cell in cells]


def links(driver: webdriver.Chrome, ident: str) -> dict[str, str]:
    """``{href: text}`` of every link inside ``ident``."""
    pairs = driver.execute_script(
        "return Array.from(document.getElementById(arguments[0]).querySelectorAll('a'), "
        "a => [a.getAttribute('href'), a.innerText])",
        ident,
    )
    return {str(href): str(text) for href, text in pairs}


def text_of(driver: webdriver.Chrome, ident: str) -> str:
    return str(driver.execute_script(f"return document.getElementById('{ident}').innerText"))


def headline(driver: webdriver.Chrome) -> str:
    return str(driver.execute_script("return document.querySelector('#summary').innerText"))


def screenshot(driver: webdriver.Chrome, name: str) -> Path:
    """The whole page, as ``test-artifacts/NAME``."""
    ARTIFACTS.mkdir(exist_ok=True)
    driver.set_window_size(1280, 600)  # so the page's height, not the window's, is measured
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(int(height) + 200, 8000))  # + the window's own frame
    path = ARTIFACTS / name
    assert driver.save_screenshot(str(path))
    return path


def test_the_open_page_follows_a_console_rehearsal(tmp_path: Path, browser: Any) -> None:
    port = free_port()
    (tmp_path / "relbot.toml").write_text(
        f"""
        poll_interval = 1
        [health]
        port = {port}
        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs"]
        [people.steve]
        roles = ["windows"]
        [people.ned]
        roles = ["macos"]
        """.replace("\n        ", "\n")
        + NO_SIGNATURES
    )
    staging = tmp_path / "relbot-data" / "staging"
    stage_demo(staging, load_profile("cpython"))
    (tmp_path / "relbot-data" / "public").mkdir()  # `relbot run` creates no folder
    hostile = staging / "3.14.1" / HOSTILE
    hostile.write_text("not anyone's\n")
    run = Rehearsal(tmp_path, port)
    try:
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            try:
                if get_json(f"{run.base}/api/releases/3.14.1")[0] == 200:
                    break
            except OSError:
                pass  # not listening yet
            time.sleep(0.2)
        browser.get(f"{run.base}/releases/3.14.1")
        browser.execute_script("window.openedOnce = true")  # gone if the page ever reloads
        assert "Not publishable yet" in headline(browser)
        assert "complete" in role_row(browser, "source")
        assert HOSTILE in text_of(browser, "files")  # as text, not markup
        assert not browser.find_elements(By.CSS_SELECTOR, "main img")
        assert "unexpected" in headline(browser)  # what blocks, named where the eye is

        run.type("/ready source 3.14.1")
        until(browser, "source ready by hugo", lambda d: "ready hugo" in role_row(d, "source"))
        assert "(just now)" in role_row(browser, "source")  # beside the absolute time
        assert "hugo," not in role_row(browser, "source")  # Detail does not repeat By
        until(browser, "source's hashes", lambda d: len(hashes(d)) >= 4)
        for sha in hashes(browser):  # short on the page, whole on hover and when copied
            assert re.fullmatch(r"[0-9a-f]{64}", sha["text"]) and sha["title"] == sha["text"]
            assert sha["shown"] < sha["whole"] / 3, sha
        signatures = column(browser, "files", "Signature")
        assert "not required" in signatures and "missing" not in signatures
        hostile.unlink()
        until(browser, "the stray file gone", lambda d: HOSTILE not in text_of(d, "files"))

        run.type("/ready docs 3.14.1", "/as steve", "/ready windows 3.14.1", "/as ned")
        run.type("/ready macos 3.14.1")
        until(browser, "every role ready", lambda d: "Publishable" in headline(d))
        assert run.release("3.14.1")["publishable"] is True
        release_tab = browser.current_window_handle
        browser.switch_to.new_window("tab")  # the index, beside the open release page
        browser.get(f"{run.base}/")
        assert "ready ready ready ready" in " ".join(text_of(browser, "open").split())
        screenshot(browser, "board-index.png")
        browser.close()
        browser.switch_to.window(release_tab)

        run.type("/unready macos 3.14.1")
        until(browser, "macos withdrawn by ned",
              lambda d: role_row(d, "macos").startswith("macos withdrawn ned"))  # fmt: skip
        assert "Not publishable yet" in headline(browser)
        assert "nobody said /ready macos 3.14.1" in text_of(browser, "summary")
        data = run.release("3.14.1")
        assert data["publishable"] is False
        assert (data["roles"]["macos"]["state"], data["roles"]["macos"]["by"]) == (
            "withdrawn",
            "ned",
        )
        run.type("/as hugo", "/publish 3.14.1")  # refused, as the board says
        run.wait_for_output(r"3\.14\.1 cannot be published yet: macos: nobody said /ready")
        screenshot(browser, "board-after-withdrawal.png")

        run.type("/as ned", "/ready macos 3.14.1")
        until(browser, "publishable again", lambda d: "Publishable" in headline(d))
        assert run.release("3.14.1")["publishable"] is True
        run.type("/as hugo", "/publish 3.14.1")
        confirm = run.wait_for_output(r"/publish 3\.14\.1 confirm ([A-Z0-9]{6,12})")
        until(browser, "the plan offered", lambda d: "Offered to hugo" in text_of(d, "plan"))
        assert confirm.group(1) not in browser.page_source

        run.type(confirm.group(0))
        until(browser, "the release published", lambda d: "Published by hugo" in headline(d))
        timeline = browser.execute_script(
            "return Array.from(document.querySelectorAll('#timeline tbody tr'), r => r.innerText)"
        )
        assert "published" in timeline[0] and "claimed" in timeline[-1]  # newest first
        files = text_of(browser, "files")
        assert "3.14.1/Python-3.14.1.tgz" in files and "published" in files
        assert confirm.group(1) not in browser.page_source
        assert browser.execute_script("return window.openedOnce === true"), "the page reloaded"
        data = run.release("3.14.1")
        assert data["published"] is True and data["publishable"] is False
        assert data["blockers"] == [] and not browser.find_elements(By.CSS_SELECTOR, ".blockers")
        page_link = "https://www.python.org/downloads/release/python-3141/"
        assert data["links"] == {
            "release page": page_link,
            "files": "https://www.python.org/ftp/python/3.14.1/",
        }
        assert links(browser, "summary") == {
            page_link: page_link,
            "https://www.python.org/ftp/python/3.14.1/": "https://www.python.org/ftp/python/3.14.1/",
        }
        public = links(browser, "files")  # each public file, linked where python.org serves it
        assert len(public) == len(data["files"]) == 19
        for f in data["files"]:
            assert public[f"https://www.python.org/ftp/python/{f['target']}"] == f["target"]
        assert "1 file claimed" in role_row(browser, "macos") and "1 files" not in files
        shot = screenshot(browser, "board-after-publish.png")
        assert shot.stat().st_size > 10_000

        browser.get(f"{run.base}/")
        assert "3.14.1" in text_of(browser, "published")
        assert run.finish() == 0, run.output.read_text()
    finally:
        run.kill()
