"""The python.org release database client against the API double over loopback HTTP."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator

import httpx
import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, RegistryError
from bot.http_client import RetryPolicy
from bot.ports import Registry, RegistryReport
from bot.pydotorg.cdn import CdnPurger
from bot.pydotorg.registry import PydotorgRegistry
from tests.doubles.pydotorg import PydotorgDouble

KEY = "s3cr3t-4p1-k3y-0123456789abcdef"
FTP = "https://www.python.org/ftp/python/"


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True), "intern": ("intern-key", False)}) as double:
        yield double


class Sleeps(list[float]):
    """A fake ``time.sleep`` that remembers the waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def registry(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps, auth: str = f"rm:{KEY}"
) -> PydotorgRegistry:
    return PydotorgRegistry(api.url, auth, profile, retry=RetryPolicy(attempts=3, sleep=sleeps))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_plan(
    profile: Profile,
    text: str,
    sidecars: dict[str, tuple[str, ...]],
    *,
    seed: str = "",
    extra: tuple[tuple[str, str], ...] = (),
) -> PublishPlan:
    """Every required file of ``text`` (size ``1000 + len(path)``, SHA-256 of seed + path),
    the sidecars named per role, and ``extra`` (role, path) files."""
    tag = ReleaseTag.parse(text)
    files: list[PlanFile] = []

    def add(role: str, path: str) -> None:
        target = profile.public_target(tag, role, path)
        files.append(PlanFile(path, target, role, 1000 + len(path), digest(seed + path)))

    for expected in profile.expected(tag):
        add(expected.role, expected.path)
        for suffix in sidecars.get(expected.role, ()):
            add(expected.role, expected.path + suffix)
    for role, path in extra:
        add(role, path)
    return PublishPlan(tag, tuple(files))


def records(api: PydotorgDouble, release: str) -> dict[str, dict[str, object]]:
    """The release's records by file name, with the OS as its slug."""
    out = {}
    for record in api.files(release):
        out[str(record["url"]).rsplit("/", 1)[-1]] = {**record, "os": api.os_slug(record["os"])}
    return out


def expected_record(
    version: str,
    file: str,
    name: str,
    slug: str,
    os: str,
    *,
    button: bool = False,
    description: str = "",
    sidecars: dict[str, str] | None = None,
    seed: str = "",
) -> dict[str, object]:
    url = f"{FTP}{version}/{file}"
    return {
        "name": name,
        "slug": slug,
        "os": os,
        "description": description,
        "is_source": os == "source",
        "url": url,
        "sha256_sum": digest(seed + file),
        "filesize": 1000 + len(file),
        "download_button": button,
        "md5_sum": "",
        "gpg_signature_file": "",
        "sigstore_signature_file": "",
        "sigstore_cert_file": "",
        "sigstore_bundle_file": "",
        "sbom_spdx2_file": "",
        **{field: url + suffix for field, suffix in (sidecars or {}).items()},
    }


def assert_records(api: PydotorgDouble, release: str, expected: list[dict[str, object]]) -> None:
    got = records(api, release)
    assert sorted(got) == sorted(str(e["url"]).rsplit("/", 1)[-1] for e in expected)
    release_uri = api.files(release)[0]["release"]
    for want in expected:
        have = got[str(want["url"]).rsplit("/", 1)[-1]]
        for key, value in want.items():
            assert have[key] == value, (want["url"], key)
        assert have["release"] == release_uri


def test_the_registry_implements_the_port(api: PydotorgDouble, profile: Profile) -> None:
    port: Registry = registry(api, profile, Sleeps())
    assert callable(port.preflight) and callable(port.sync)


def test_full_registration_of_a_3_13_release_with_gpg_signatures(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.13.1")
    plan = make_plan(
        profile,
        "3.13.1",
        {"source": (".asc", ".spdx.json", ".sigstore"), "windows": (".sigstore",)},
        extra=(("windows", "amd64/core.msi"), ("windows", "python-3.13.1-amd64.zip")),
    )
    reg = registry(api, profile, sleeps)
    reg.preflight(ReleaseTag.parse("3.13.1"))
    assert reg.sync(plan) == RegistryReport(created=10)

    src = {"gpg_signature_file": ".asc", "sbom_spdx2_file": ".spdx.json"}
    src |= {"sigstore_bundle_file": ".sigstore"}
    win = {"sigstore_bundle_file": ".sigstore"}
    v = "3.13.1"
    assert_records(
        api,
        "Python 3.13.1",
        [
            expected_record(v, "Python-3.13.1.tgz", "Gzipped source tarball",
                            "3131-Gzipped-source-tarball", "source", sidecars=src),
            expected_record(v, "Python-3.13.1.tar.xz", "XZ compressed source tarball",
                            "3131-XZ-compressed-source-tarball", "source", button=True,
                            sidecars=src),
            expected_record(v, "python-3.13.1.exe", "Windows installer (32-bit)",
                            "3131-Windows-installer-32-bit", "windows", sidecars=win),
            expected_record(v, "python-3.13.1-amd64.exe", "Windows installer (64-bit)",
                            "3131-Windows-installer-64-bit", "windows", button=True,
                            description="Recommended", sidecars=win),
            expected_record(v, "python-3.13.1-arm64.exe", "Windows installer (ARM64)",
                            "3131-Windows-installer-ARM64", "windows",
                            description="Experimental", sidecars=win),
            expected_record(v, "python-3.13.1-embed-win32.zip",
                            "Windows embeddable package (32-bit)",
                            "3131-Windows-embeddable-package-32-bit", "windows", sidecars=win),
            expected_record(v, "python-3.13.1-embed-amd64.zip",
                            "Windows embeddable package (64-bit)",
                            "3131-Windows-embeddable-package-64-bit", "windows", sidecars=win),
            expected_record(v, "python-3.13.1-embed-arm64.zip",
                            "Windows embeddable package (ARM64)",
                            "3131-Windows-embeddable-package-ARM64", "windows", sidecars=win),
            expected_record(v, "windows-3.13.1.json", "Windows release manifest",
                            "3131-Windows-release-manifest", "windows",
                            description="Install with 'py install 3.13'", sidecars=win),
            expected_record(v, "python-3.13.1-macos11.pkg", "macOS installer",
                            "3131-macOS-installer", "macos", button=True,
                            description="for macOS 10.13 and later"),
        ],
    )  # fmt: skip
    assert [r.method for r in api.writes] == ["POST"] * 10


def test_full_registration_of_a_3_14_release_with_android_manifest_and_sigstore(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    sig = (".sigstore", ".sig", ".crt")
    plan = make_plan(
        profile,
        "3.14.1",
        {"source": (*sig, ".spdx.json"), "windows": sig, "macos": (".sigstore",)},
        extra=(("windows", "arm64/core.msi"), ("windows", "python-3.14.1t-amd64.zip")),
    )
    assert any(f.role == "docs" for f in plan.files)  # published, never registered
    reg = registry(api, profile, sleeps)
    reg.preflight(ReleaseTag.parse("3.14.1"))
    assert reg.sync(plan) == RegistryReport(created=12)

    three = {"sigstore_bundle_file": ".sigstore", "sigstore_signature_file": ".sig"}
    three |= {"sigstore_cert_file": ".crt"}
    src = three | {"sbom_spdx2_file": ".spdx.json"}
    v = "3.14.1"
    assert_records(
        api,
        "Python 3.14.1",
        [
            expected_record(v, "Python-3.14.1.tgz", "Gzipped source tarball",
                            "3141-Gzipped-source-tarball", "source", sidecars=src),
            expected_record(v, "Python-3.14.1.tar.xz", "XZ compressed source tarball",
                            "3141-XZ-compressed-source-tarball", "source", button=True,
                            sidecars=src),
            expected_record(v, "python-3.14.1-aarch64-linux-android.tar.gz",
                            "Android embeddable package (aarch64)",
                            "3141-Android-embeddable-package-aarch64", "android", sidecars=src),
            expected_record(v, "python-3.14.1-x86_64-linux-android.tar.gz",
                            "Android embeddable package (x86_64)",
                            "3141-Android-embeddable-package-x86_64", "android", sidecars=src),
            expected_record(v, "python-3.14.1.exe", "Windows installer (32-bit)",
                            "3141-Windows-installer-32-bit", "windows", sidecars=three),
            expected_record(v, "python-3.14.1-amd64.exe", "Windows installer (64-bit)",
                            "3141-Windows-installer-64-bit", "windows", button=True,
                            description="Recommended", sidecars=three),
            expected_record(v, "python-3.14.1-arm64.exe", "Windows installer (ARM64)",
                            "3141-Windows-installer-ARM64", "windows",
                            description="Experimental", sidecars=three),
            expected_record(v, "python-3.14.1-embed-win32.zip",
                            "Windows embeddable package (32-bit)",
                            "3141-Windows-embeddable-package-32-bit", "windows", sidecars=three),
            expected_record(v, "python-3.14.1-embed-amd64.zip",
                            "Windows embeddable package (64-bit)",
                            "3141-Windows-embeddable-package-64-bit", "windows", sidecars=three),
            expected_record(v, "python-3.14.1-embed-arm64.zip",
                            "Windows embeddable package (ARM64)",
                            "3141-Windows-embeddable-package-ARM64", "windows", sidecars=three),
            expected_record(v, "windows-3.14.1.json", "Windows release manifest",
                            "3141-Windows-release-manifest", "windows",
                            description="Install with 'py install 3.14'", sidecars=three),
            expected_record(v, "python-3.14.1-macos11.pkg", "macOS installer",
                            "3141-macOS-installer", "macos", button=True,
                            description="for macOS 10.15 and later",
                            sidecars={"sigstore_bundle_file": ".sigstore"}),
        ],
    )  # fmt: skip


def test_a_prerelease_slug_carries_its_suffix(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.0rc2")
    plan = make_plan(profile, "3.14.0rc2", {})
    registry(api, profile, sleeps).sync(plan)
    got = records(api, "Python 3.14.0rc2")
    assert got["python-3.14.0rc2-amd64.exe"]["slug"] == "3140-rc2-Windows-installer-64-bit"
    assert got["python-3.14.0rc2-amd64.exe"]["url"] == (f"{FTP}3.14.0/python-3.14.0rc2-amd64.exe")


def test_rerun_is_a_noop_without_write_requests(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", {"source": (".sigstore", ".spdx.json")})
    registry(api, profile, sleeps).sync(plan)
    writes = len(api.writes)

    again = registry(api, profile, sleeps)  # a fresh process, as after a restart
    again.preflight(plan.tag)
    assert again.sync(plan) == RegistryReport(unchanged=12)
    assert len(api.writes) == writes


def test_a_changed_file_is_replaced_and_nothing_else_is_touched(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    plan = make_plan(profile, "3.14.1", {})
    reg = registry(api, profile, sleeps)
    reg.sync(plan)
    before = records(api, "Python 3.14.1")
    changed = "3.14.1/python-3.14.1-amd64.exe"
    respun = PublishPlan(
        plan.tag,
        tuple(
            PlanFile(f.path, f.target, f.role, f.size + 1, digest("respin" + f.path))
            if f.target == changed
            else f
            for f in plan.files
        ),
    )
    writes = len(api.writes)

    assert reg.sync(respun) == RegistryReport(replaced=1, unchanged=11)

    after = records(api, "Python 3.14.1")
    new = after["python-3.14.1-amd64.exe"]
    assert new["sha256_sum"] == digest("respin" + "python-3.14.1-amd64.exe")
    assert new["filesize"] == 1000 + len("python-3.14.1-amd64.exe") + 1
    assert new["download_button"] is True and new["description"] == "Recommended"
    assert [(r.method, r.status) for r in api.writes[writes:]] == [("DELETE", 204), ("POST", 201)]
    assert api.writes[writes].path == before["python-3.14.1-amd64.exe"]["resource_uri"]
    for name, record in before.items():
        if name != "python-3.14.1-amd64.exe":
            assert after[name]["resource_uri"] == record["resource_uri"]


def test_new_records_come_before_stale_ones_go(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    full = make_plan(profile, "3.14.1", {})
    reg = registry(api, profile, sleeps)
    gone = "3.14.1/python-3.14.1-arm64.exe"
    reg.sync(PublishPlan(full.tag, tuple(f for f in full.files if f.target != gone)))
    # The next plan gains arm64.exe and loses the Android builds (say, a profile change).
    smaller = PublishPlan(full.tag, tuple(f for f in full.files if "android" not in f.target))
    writes = len(api.writes)

    assert reg.sync(smaller) == RegistryReport(created=1, deleted=2, unchanged=9)
    assert [r.method for r in api.writes[writes:]] == ["POST", "DELETE", "DELETE"]
    assert "python-3.14.1-arm64.exe" in records(api, "Python 3.14.1")
    assert len(api.files("Python 3.14.1")) == 10


def test_a_404_on_the_first_delete_is_an_error_not_a_deletion(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    # Only a 404 after a retried DELETE means an earlier attempt deleted the record; on the
    # first attempt python.org never had it (or we asked the wrong URL): never report it gone.
    api.add_release("Python 3.14.1")
    full = make_plan(profile, "3.14.1", {})
    reg = registry(api, profile, sleeps)
    reg.sync(full)
    registered = len(api.files("Python 3.14.1"))
    smaller = PublishPlan(full.tag, tuple(f for f in full.files if "android" not in f.target))
    api.fail("delete", status=404)

    with pytest.raises(RegistryError, match="404"):
        reg.sync(smaller)
    assert len(api.files("Python 3.14.1")) == registered  # nothing was deleted


def test_failing_fifth_create_then_retried_run_ends_with_full_set_never_zero_files(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    old = make_plan(profile, "3.14.1", {"source": (".sigstore",)}, seed="first build ")
    registry(api, profile, sleeps).sync(old)
    # A respin: every file has new content, so every record must be replaced.
    plan = make_plan(profile, "3.14.1", {"source": (".sigstore",)}, seed="respin ")
    api.requests.clear()
    api.fail("create", nth=5, status=500, times=3)  # every attempt of the 5th create

    with pytest.raises(RegistryError, match=r"HTTP 500"):
        registry(api, profile, sleeps).sync(plan)
    assert sleeps == [1.0, 2.0]  # the 5th create was retried with backoff, then given up
    assert 0 < len(api.files("Python 3.14.1")) < 12 + 1

    report = registry(api, profile, sleeps).sync(plan)

    assert report.unchanged == 4 and report.created + report.replaced == 8
    got = records(api, "Python 3.14.1")
    assert len(got) == 12
    assert all(r["sha256_sum"] == digest("respin " + name) for name, r in got.items())
    assert min(api.counts_after_writes("Python 3.14.1")) > 0


def test_a_first_registration_interrupted_midway_keeps_what_it_made(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.13.1")
    plan = make_plan(profile, "3.13.1", {"source": (".asc",)})
    api.fail("create", nth=5, status=503, times=3)

    with pytest.raises(RegistryError):
        registry(api, profile, sleeps).sync(plan)
    assert len(api.files("Python 3.13.1")) == 4  # today's script would delete these

    assert registry(api, profile, sleeps).sync(plan) == RegistryReport(created=6, unchanged=4)
    assert len(api.files("Python 3.13.1")) == 10
    assert min(api.counts_after_writes("Python 3.13.1")) > 0


def test_a_create_whose_answer_was_lost_is_not_duplicated(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.13.1")
    plan = make_plan(profile, "3.13.1", {})
    api.fail("create", nth=2, status=502, commit=True)  # done, but the answer was a 502

    assert registry(api, profile, sleeps).sync(plan) == RegistryReport(created=10)
    assert len(api.files("Python 3.13.1")) == 10
    # Looked up before any second POST: found, so never sent again.
    assert sleeps == [] and [r.method for r in api.writes] == ["POST"] * 10


def test_preflight_refuses_a_missing_release(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.0")
    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps).preflight(ReleaseTag.parse("3.14.1"))
    assert "create the release 'Python 3.14.1' in the python.org admin first" in str(caught.value)
    assert api.writes == []


def test_preflight_finds_the_release_and_every_os(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    registry(api, profile, sleeps).preflight(ReleaseTag.parse("3.14.1"))
    asked = [(r.path, {k: v[-1] for k, v in r.query.items()}) for r in api.requests]
    assert asked[0] == ("/api/v1/downloads/release/", {"name": "Python 3.14.1"})
    slugs = [q["slug"] for path, q in asked[1:] if path == "/api/v1/downloads/os/"]
    assert slugs == ["source", "windows", "macos", "android", "ios"]
    assert all(r.user == "rm" for r in api.requests)


def test_preflight_refuses_an_os_python_org_does_not_have(profile: Profile, sleeps: Sleeps) -> None:
    with PydotorgDouble(users={"rm": (KEY, True)}, oses=(("Source", "source"),)) as api:
        api.add_release("Python 3.14.1")
        with pytest.raises(RegistryError, match="no operating system with slug 'windows'"):
            registry(api, profile, sleeps).preflight(ReleaseTag.parse("3.14.1"))


def test_bad_credentials_give_a_clear_error(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps, auth="rm:wrong-key").preflight(ReleaseTag.parse("3.14.1"))
    message = str(caught.value)
    assert "refused the credentials of API user 'rm'" in message and "HTTP 401" in message
    assert "check the python.org API key: 'user:apikey' of a staff user" in message
    assert "wrong-key" not in message
    assert sleeps == []  # a 401 is not retried


def test_a_refused_key_names_where_it_came_from(api: PydotorgDouble, profile: Profile) -> None:
    api.add_release("Python 3.14.1")
    reg = PydotorgRegistry(api.url, "rm:wrong-key", profile, auth_source="PYDOTORG_API_KEY")
    with pytest.raises(RegistryError, match="check PYDOTORG_API_KEY: 'user:apikey' of a staff"):
        reg.preflight(ReleaseTag.parse("3.14.1"))


def test_a_key_that_is_not_staff_is_refused_at_the_first_write(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1", published=True)
    reg = registry(api, profile, sleeps, auth="intern:intern-key")
    reg.preflight(ReleaseTag.parse("3.14.1"))
    with pytest.raises(RegistryError, match=r"credentials of API user 'intern'.*staff"):
        reg.sync(make_plan(profile, "3.14.1", {}))
    assert api.files("Python 3.14.1") == []


def test_auth_must_be_user_colon_key(profile: Profile) -> None:
    for bad in ("rm", f"rm:{KEY}:x", ":key", "rm:"):
        with pytest.raises(ConfigError) as caught:
            PydotorgRegistry("http://127.0.0.1:9/api/v1/", bad, profile)
        message = str(caught.value)
        assert KEY not in message and "exactly one ':'" in message
        assert message.startswith("the python.org API key must be 'user:apikey'")
        assert message.endswith(" (the value is not shown).")


def test_429_retry_after_is_honored(api: PydotorgDouble, profile: Profile, sleeps: Sleeps) -> None:
    api.add_release("Python 3.14.1")
    api.fail("create", nth=3, status=429, retry_after=7)
    report = registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))
    assert report == RegistryReport(created=12)
    assert sleeps == [7.0]
    statuses = [r.status for r in api.writes]
    assert statuses[2] == 429 and statuses.count(201) == 12


def test_connection_errors_are_retried_then_reported(profile: Profile, sleeps: Sleeps) -> None:
    with PydotorgDouble() as api:
        url = api.url
    # The double is stopped: nothing listens on its port any more.
    reg = PydotorgRegistry(url, f"rm:{KEY}", profile, retry=RetryPolicy(attempts=3, sleep=sleeps))
    with pytest.raises(RegistryError, match="could not be reached") as caught:
        reg.preflight(ReleaseTag.parse("3.14.1"))
    assert "could not be reached to look up release 'Python 3.14.1'" in str(caught.value)
    assert sleeps == [1.0, 2.0]
    assert KEY not in str(caught.value)


def test_a_slug_held_by_another_record_is_named_not_retried(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    other = api.add_release("Python 3.14.1 (test copy)")
    # Another release already holds this slug: python.org answers the duplicate with a 500.
    pk = api.add_file(
        name="x", slug="3141-macOS-installer", url="https://www.python.org/x.pkg",
        os="/api/v1/downloads/os/3/", release=f"/api/v1/downloads/release/{other}/",
    )  # fmt: skip
    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))
    message = str(caught.value)
    assert "could not create the record 'macOS installer'" in message and "HTTP 500" in message
    assert f"its record /api/v1/downloads/release_file/{pk}/ has the same slug" in message
    assert sleeps == [] and [r.status for r in api.writes].count(500) == 1


def test_pagination_is_followed_when_listing_a_releases_files(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    pk = api.add_release("Python 3.14.1")
    for n in range(130):  # stale records from an old tool: more than one page of 100
        api.add_file(
            name=f"old {n}", slug=f"old-{n}", url=f"https://www.python.org/old/{n}",
            os="/api/v1/downloads/os/1/", release=f"/api/v1/downloads/release/{pk}/",
        )  # fmt: skip
    report = registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))
    assert report == RegistryReport(created=12, deleted=130)
    lists = [r for r in api.requests if r.method == "GET" and "release_file" in r.path]
    assert [r.query.get("offset", ["0"])[0] for r in lists] == ["0", "100"]
    assert len(api.files("Python 3.14.1")) == 12


def test_the_api_key_never_appears_in_logs_errors_or_reprs(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "bot"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    api.add_release("Python 3.14.1")
    reg = registry(api, profile, sleeps)
    reg.preflight(ReleaseTag.parse("3.14.1"))
    reg.sync(make_plan(profile, "3.14.1", {}))
    api.fail("any", status=503, times=10)
    with pytest.raises(RegistryError) as caught:
        reg.sync(make_plan(profile, "3.14.1", {}, seed="respin"))

    assert any(r.name.startswith("httpx") for r in caplog.records)  # we did see httpx talk
    texts = [caplog.text, str(caught.value), repr(caught.value), repr(reg), repr(reg.settings)]
    texts += [r.getMessage() for r in caplog.records]
    texts += [repr(r.args) for r in caplog.records]
    cause = caught.value.__cause__
    while cause is not None:
        texts += [str(cause), repr(cause)]
        cause = cause.__cause__
    assert all(KEY not in text for text in texts)
    assert any(r.user == "rm" for r in api.requests)  # the key was really sent
    assert repr(reg) == f"PydotorgRegistry(api_url={api.url!r}, user='rm')"


# --- the double enforces what python.org enforces ---------------------------------------------


def test_double_refuses_what_python_org_refuses(api: PydotorgDouble) -> None:
    rel = api.add_release("Python 3.14.1")
    files = f"{api.url}downloads/release_file/"
    url = "https://www.python.org/ftp/python/3.14.1/a.exe"
    good: dict[str, object] = {
        "name": "n", "slug": "s1", "os": "/api/v1/downloads/os/2/",
        "release": f"/api/v1/downloads/release/{rel}/", "download_button": True, "url": url,
    }  # fmt: skip
    auth = {"Authorization": f"ApiKey rm:{KEY}"}
    with httpx.Client(headers=auth) as client:
        created = client.post(files, json=good)
        assert created.status_code == 201 and created.headers["Location"].endswith("/")
        # A duplicate is a 500 (PostgreSQL refuses it), a bad URL a 400 (python.org's clean()).
        for change in (
            {"slug": "s2"},  # same url
            {"url": url + "x"},  # same slug
            {"slug": "s3", "url": url + "y"},  # a second download button for windows
            {"slug": "s4", "url": "https://example.org/a.exe", "download_button": False},
            {"slug": "s5", "url": url + "z", "download_button": False,
             "sigstore_bundle_file": url + ".sigstore"},  # not url + suffix
        ):  # fmt: skip
            status = client.post(files, json={**good, **change}).status_code
            assert status == (500 if "download_button" not in change else 400), change
        assert client.delete(files).status_code == 400  # no release filter
        assert client.delete(files, params={"release": rel, "slug": "s1"}).status_code == 400
        assert created.headers["Location"].startswith("/api/v1/")  # relative, as python.org
        assert (
            client.put(api.base_url + created.headers["Location"][1:], json=good).status_code == 405
        )
        assert client.delete(f"{files}999/").status_code == 404
        assert client.get(files, params={"release": rel}).json()["meta"]["total_count"] == 1
        assert client.delete(files, params={"release": rel}).status_code == 204
    with httpx.Client() as guest:
        assert guest.post(files, json=good).status_code == 401
        assert guest.get(files, params={"username": "rm", "api_key": KEY}).status_code == 401
        bad_headers = {"Authorization": f"ApiKey rm {KEY}"}
        assert guest.get(files, headers=bad_headers).status_code == 401
        releases = guest.get(f"{api.url}downloads/release/").json()
        assert releases["objects"] == []  # unpublished: staff only
    with httpx.Client(headers={"Authorization": "ApiKey intern:intern-key"}) as intern:
        assert intern.post(files, json=good).status_code == 401


# --- the CDN ----------------------------------------------------------------------------------


def test_cdn_purge_urls_are_todays(profile: Profile) -> None:
    with CdnPurger.from_profile(profile) as purger:
        urls = purger.urls(ReleaseTag.parse("3.14.0rc2"))
    ftp = "https://www.python.org/ftp/python/3.14.0/"
    tarballs = [f"{ftp}Python-3.14.0rc2{ext}" for ext in (".tgz", ".tar.xz")]
    assert urls == [
        "https://www.python.org/downloads/release/python-3140rc2/",
        "https://docs.python.org/release/3.14.0rc2/",
        ftp,
        "https://docs.python.org/release/3.14.0/",
        "https://www.python.org/downloads/",
        "https://www.python.org/downloads/windows/",
        "https://www.python.org/downloads/macos/",
    ] + [t + s for t in tarballs for s in ("", ".asc", ".crt", ".sig", ".sigstore", ".spdx.json")]


def rebased(api: PydotorgDouble, profile: Profile) -> list[str]:
    """The profile's purge templates pointed at the double instead of python.org."""
    return [
        t.replace("https://www.python.org/", api.base_url).replace(
            "https://docs.python.org/", api.base_url + "docs/"
        )
        for t in profile.spec.pydotorg["purge"]
    ]


def test_cdn_purge_sends_purge_to_every_url(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    tag = ReleaseTag.parse("3.14.1")
    with CdnPurger(rebased(api, profile), retry=RetryPolicy(sleep=sleeps)) as purger:
        report = purger.purge(tag)
    # For a final, {tag} and {version} are one: the docs URL is purged once.
    assert report.ok and len(report.purged) == 18
    assert api.purges[:3] == [
        "/downloads/release/python-3141/",
        "/docs/release/3.14.1/",
        "/ftp/python/3.14.1/",
    ]
    assert "/ftp/python/3.14.1/Python-3.14.1.tar.xz.sigstore" in api.purges
    assert len(api.purges) == 18 and all(r.method == "PURGE" for r in api.requests)


def test_a_failing_purge_is_retried_then_reported_not_raised(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.fail("purge", nth=2, status=503, times=3)  # the 2nd URL fails every attempt
    api.fail("purge", nth=6, status=500, times=1)  # the 3rd URL fails once, then works
    with CdnPurger(rebased(api, profile), retry=RetryPolicy(attempts=3, sleep=sleeps)) as purger:
        report = purger.purge(ReleaseTag.parse("3.14.1"))
    assert not report.ok
    assert [(f.url.removeprefix(api.base_url), f.reason) for f in report.failed] == [
        ("docs/release/3.14.1/", "HTTP 503")
    ]
    assert len(report.purged) == 17
    assert sleeps == [1.0, 2.0, 1.0]
