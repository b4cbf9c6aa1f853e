"""Signing at the confirmation, the pure part: when a staged signature file stops the bot
from signing, the plan entries of the signature files it writes, and where they go."""

from __future__ import annotations

import hashlib

import pytest

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import Profile, load_profile
from bot.domain.signing_plan import sidecar_files, signing_problems, with_signatures
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.0")
SOURCE = "Python-3.14.0.tar.xz"


@pytest.fixture(scope="module")
def cpython() -> Profile:
    return load_profile("cpython")


def entry(path: str, role: str = "source", replaces: str = "") -> PlanFile:
    return PlanFile(
        path, f"3.14.0/{path}", role, 100, hashlib.sha256(path.encode()).hexdigest(), replaces
    )


def plan_of(*paths: str) -> PublishPlan:
    return PublishPlan(TAG, tuple(entry(p) for p in paths))


def test_the_bot_can_sign_files_with_no_signature_file_staged_beside_them() -> None:
    assert signing_problems(plan_of(SOURCE, "Python-3.14.0.tgz"), [SOURCE]) == []


def test_a_staged_signature_file_without_its_bundle_stops_the_bot_from_signing() -> None:
    problems = signing_problems(plan_of(SOURCE, f"{SOURCE}.sig"), [SOURCE])
    assert len(problems) == 1
    assert problems[0].startswith(
        f"{SOURCE}.sig is staged without a valid {SOURCE}.sigstore; remove it"
    )
    assert (
        "the bot writes all three signature files at /publish) or stage a valid bundle"
        in (problems[0])
    )


def test_the_signature_files_the_bot_writes_go_with_their_file_in_its_role() -> None:
    contents = {".sig": b"signature", ".crt": b"certificate!", ".sigstore": b"{}"}
    assert sidecar_files(entry(SOURCE), contents) == tuple(
        PlanFile(
            f"{SOURCE}{suffix}",
            f"3.14.0/{SOURCE}{suffix}",
            "source",
            len(data),
            hashlib.sha256(data).hexdigest(),
        )
        for suffix, data in contents.items()
    )


def test_signature_files_join_the_end_of_a_plan_without_indexes(cpython: Profile) -> None:
    sig = entry(f"{SOURCE}.sigstore")
    signed = with_signatures(plan_of("doc.zip", SOURCE), [sig], cpython.is_index)
    assert [f.path for f in signed.files] == ["doc.zip", SOURCE, sig.path]


def test_signature_files_go_before_the_indexes(cpython: Profile) -> None:
    sig = entry(f"{SOURCE}.sigstore")
    plan = plan_of(SOURCE, "windows-3.14.0.json")
    signed = with_signatures(plan, [sig], cpython.is_index)
    assert [f.path for f in signed.files] == [SOURCE, sig.path, "windows-3.14.0.json"]


def test_signature_files_go_before_the_files_that_replace_live_ones(cpython: Profile) -> None:
    sig = entry(f"{SOURCE}.sigstore")
    replacing = entry("index.txt", replaces="absent")
    plan = PublishPlan(TAG, (entry(SOURCE), replacing, entry("windows-3.14.0.json")))
    signed = with_signatures(plan, [sig], cpython.is_index)
    assert [f.path for f in signed.files] == [SOURCE, sig.path, "index.txt", "windows-3.14.0.json"]
