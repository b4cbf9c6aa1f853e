"""What blocks a publish beyond readiness: no RM, published or publishing already, staging
never listed, files changed after /ready."""

from __future__ import annotations

from bot.domain.blockers import publish_blockers
from bot.domain.claims import Claim
from bot.domain.files import SnapshotFile, StagedFile
from bot.domain.history import ReleaseState
from bot.domain.plan import PublishPlan
from bot.domain.profile import load_profile
from bot.domain.readiness import compute_readiness
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.1")
T0 = 1_800_000_000.0
PROFILE = load_profile("cpython")


def complete() -> dict[str, StagedFile]:
    return {f.path: StagedFile(f.path, 1000 + i, T0) for i, f in enumerate(PROFILE.expected(TAG))}


def claimed(listing: dict[str, StagedFile], digest: str = "a" * 64) -> ReleaseState:
    claims = {
        role: Claim(
            role,
            "hugo",
            T0,
            tuple(
                SnapshotFile(f.path, listing[f.path].size, T0, digest)
                for f in PROFILE.expected(TAG)
                if f.role == role
            ),
        )
        for role in PROFILE.roles_for(TAG)
    }
    return ReleaseState(TAG, claims=claims)


def test_nothing_blocks_a_ready_release_whose_files_did_not_change() -> None:
    listing = complete()
    state = claimed(listing)
    readiness = compute_readiness(PROFILE, TAG, listing, previous=listing, claims=state.claims)
    digests = dict.fromkeys(listing, "a" * 64)

    assert publish_blockers(state, ["hugo"], listing, readiness, digests) == []


def test_a_file_rewritten_after_ready_blocks_its_role() -> None:
    before = complete()
    state = claimed(before)
    path = next(iter(before))
    listing = {**before, path: StagedFile(path, before[path].size, T0 + 5)}  # same size
    readiness = compute_readiness(PROFILE, TAG, listing, previous=listing, claims=state.claims)
    digests = {**dict.fromkeys(listing, "a" * 64), path: "b" * 64}

    blockers = publish_blockers(state, ["hugo"], listing, readiness, digests)

    assert len(blockers) == 1 and f"{path} changed after /ready" in blockers[0]


def test_a_release_never_listed_is_blocked_until_it_is() -> None:
    state = ReleaseState(TAG)

    assert publish_blockers(state, ["hugo"], None, None, {}) == ["staging has not been listed yet"]
    assert publish_blockers(state, [], None, None, {}) == [
        "no release manager is configured for 3.14",
        "staging has not been listed yet",
    ]


def test_a_published_or_publishing_release_is_blocked_whatever_staging_says() -> None:
    published = ReleaseState(TAG, published_at=T0)
    publishing = ReleaseState(TAG, publishing=PublishPlan(TAG, ()))

    assert publish_blockers(published, ["hugo"], {}, None, {}) == ["3.14.1 is already published"]
    assert publish_blockers(publishing, ["hugo"], {}, None, {}) == [
        "3.14.1 is being published right now"
    ]


def test_no_rm_and_a_missing_role_are_both_told() -> None:
    listing = complete()
    state = claimed(listing)
    del state.claims["macos"]
    readiness = compute_readiness(PROFILE, TAG, listing, previous=listing, claims=state.claims)
    digests = dict.fromkeys(listing, "a" * 64)

    blockers = publish_blockers(state, [], listing, readiness, digests)

    assert blockers[0] == "no release manager is configured for 3.14"
    assert blockers[1:] == readiness.blockers and readiness.blockers


def test_staging_listed_but_not_judged_yet_blocks() -> None:
    listing = complete()
    state = claimed(listing)

    assert publish_blockers(state, ["hugo"], listing, None, {}) == [
        "staging has not been listed yet"
    ]
    assert publish_blockers(state, ["hugo"], None, None, {}) == ["staging has not been listed yet"]


def test_every_file_changed_after_ready_is_named_once_per_role() -> None:
    before = complete()
    state = claimed(before)
    paths = [f.path for f in PROFILE.expected(TAG) if f.role == "source"][:2]
    listing = {**before, **{p: StagedFile(p, before[p].size, T0 + 5) for p in paths}}
    readiness = compute_readiness(PROFILE, TAG, listing, previous=listing, claims=state.claims)
    digests = {**dict.fromkeys(listing, "a" * 64), **dict.fromkeys(paths, "b" * 64)}

    blockers = publish_blockers(state, ["hugo"], listing, readiness, digests)

    assert blockers == [f"source: {paths[0]}, {paths[1]} changed after /ready"]
