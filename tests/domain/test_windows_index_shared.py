"""One install index for several releases of a day: the rules that let it be built once and
keep it from going live before every release it lists is public."""

from __future__ import annotations

from bot.domain.history import plan_from_json, plan_to_json
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.domain.windows_index import (
    IndexRules,
    IndexVerdict,
    Install,
    Sibling,
    judge_index,
    parse_installs,
)
from tests.windows_index_data import index_bytes, manifest_bytes

RULES = IndexRules("index-windows.json", "windows", "windows-{tag}.json")
TAG = ReleaseTag.parse("3.15.1")
LIVE = ("3.15.0", "3.14.1")


def of(version: str) -> tuple[Install, ...]:
    return parse_installs(manifest_bytes(version), version)


def judge(*versions: str, siblings: tuple[Sibling, ...] = ()) -> IndexVerdict:
    """The verdict on an index of ``versions`` staged for 3.15.1, with the live index."""
    return judge_index(
        RULES,
        TAG,
        index=index_bytes(*versions),
        catalog_staged=True,
        live=index_bytes(*LIVE),
        manifest=manifest_bytes("3.15.1"),
        siblings=siblings,
    )


def test_an_index_shared_with_an_open_release_staging_the_same_bytes_passes() -> None:
    sibling = Sibling("3.14.2", of("3.14.2"), same_index=True)
    verdict = judge("3.15.1", "3.14.2", *LIVE, siblings=(sibling,))
    assert verdict.blockers == ()
    assert verdict.shared_with == ("3.14.2",)
    assert verdict.describe() == (
        "staged, holds 3.15.1, keeps 12 live installs; shared with 3.14.2: it goes live "
        "with the last of them to publish"
    )


def test_an_index_listing_a_release_that_staged_another_index_is_refused() -> None:
    sibling = Sibling("3.14.2", of("3.14.2"), same_index=False)
    (blocker,) = judge("3.15.1", "3.14.2", *LIVE, siblings=(sibling,)).blockers
    assert blocker.startswith(
        "index-windows.json also lists 3.14.2's installs (pythoncore-3.14-64 3.14.2, "
    )
    assert blocker.endswith(
        "but 3.14.2's staging holds another index: stage the same index-windows.json and "
        "index-windows.json.cat for 3.14.2 (it goes live with the last of them to publish), "
        "or rebuild it without them"
    )


def test_an_index_listing_installs_of_no_release_the_bot_knows_is_refused() -> None:
    (blocker,) = judge("3.15.1", "3.14.2", *LIVE).blockers
    assert blocker.startswith(
        "index-windows.json lists installs that are neither live, nor this release's, nor "
        "of a release staged with the same index: pythoncore-3.14-64 3.14.2, "
    )
    assert blocker.endswith("and 3 more; rebuild it from the live index")


def test_an_index_carrying_a_published_releases_installs_is_not_shared() -> None:
    sibling = Sibling("3.14.2", of("3.14.2"), published=True, waiting=True)
    verdict = judge("3.15.1", "3.14.2", *LIVE, siblings=(sibling,))
    assert verdict.blockers == () and verdict.shared_with == ()


def test_an_index_lacking_the_installs_that_wait_for_a_shared_index_is_refused() -> None:
    waiting = Sibling("3.14.2", of("3.14.2"), published=True, waiting=True)
    (blocker,) = judge("3.15.1", *LIVE, siblings=(waiting,)).blockers
    assert blocker.startswith("index-windows.json lacks 3.14.2's installs (pythoncore-3.14-64")
    assert blocker.endswith(
        "which wait for this index: rebuild it with them, or stage the index 3.14.2 shared"
    )
    # Once they are live (the shared index went live elsewhere), nothing is owed.
    settled = Sibling("3.14.2", of("3.14.2"), published=True, waiting=False)
    assert judge("3.15.1", *LIVE, siblings=(settled,)).blockers == ()


def test_a_release_being_published_with_the_same_index_shares_it_unread() -> None:
    """Its manifest is not public yet and its staging is gone: the same bytes say enough."""
    publishing = Sibling("3.14.2", (), same_index=True)
    verdict = judge("3.15.1", "3.14.2", *LIVE, siblings=(publishing,))
    assert verdict.shared_with == ("3.14.2",)
    # With its installs unknown and another index, the extras are of no release known.
    other = Sibling("3.14.2", (), same_index=False)
    (blocker,) = judge("3.15.1", "3.14.2", *LIVE, siblings=(other,)).blockers
    assert "neither live, nor this release's" in blocker


def test_a_sibling_staging_the_same_bytes_that_do_not_list_it_is_not_waited_for() -> None:
    """Its own check refuses that index (it lacks its installs); this release's goes live."""
    sibling = Sibling("3.14.2", of("3.14.2"), same_index=True)
    verdict = judge("3.15.1", *LIVE, siblings=(sibling,))
    assert verdict.blockers == () and verdict.shared_with == ()


def test_a_sibling_the_index_does_not_list_is_no_concern() -> None:
    sibling = Sibling("3.14.2", of("3.14.2"), same_index=False)
    verdict = judge("3.15.1", *LIVE, siblings=(sibling,))
    assert verdict.blockers == () and verdict.shared_with == ()


def test_an_index_already_blocked_is_not_judged_against_its_siblings() -> None:
    sibling = Sibling("3.14.2", of("3.14.2"), same_index=True)
    verdict = judge("3.15.1", "3.14.2", "3.15.0", siblings=(sibling,))  # lost 3.14.1
    assert len(verdict.blockers) == 1 and "built before 3.14.1" in verdict.blockers[0]
    assert verdict.shared_with == ()


def plan(shared: tuple[str, ...]) -> PublishPlan:
    index = PlanFile("index-windows.json", "index-windows.json", "windows", 9, "a" * 64, "absent")
    return PublishPlan(TAG, (index,), index_shared_with=shared)


def test_a_release_published_since_the_plan_does_not_change_what_is_confirmed() -> None:
    """The index then goes live sooner, as the plan said it would with the last of them:
    the digest does not bind the list."""
    assert plan(("3.14.2",)).digest == plan(()).digest


def test_a_shared_plan_survives_the_journal() -> None:
    shared = plan(("3.14.2",))
    again = plan_from_json(TAG, plan_to_json(shared))
    assert again == shared and again.digest == shared.digest
    assert "index_shared_with" not in plan_to_json(plan(()))  # older plans read the same
