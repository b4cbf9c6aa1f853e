"""On Slack, the person a notice calls on is mentioned by user ID, so Slack notifies them."""

from __future__ import annotations

from adapters.slack.blocks import channel_payload
from bot.ports.messages import ChannelKind, ChannelMessage
from tests.slack.conftest import ALICE, HUGO, STEVE, Workspace

TAG = "3.14.1"


def notices(ws: Workspace) -> list[str]:
    return [c.body["text"] for c in ws.mock.ok("chat.postMessage") if not c.body.get("blocks")]


async def test_a_withdrawn_claim_mentions_its_claimer_by_slack_id(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.answer(await ws.command(STEVE, "/ready", f"windows {TAG}"))
    ws.world.write(TAG, "python-3.14.1-amd64.exe", "rebuilt\n")
    await ws.world.gate.scan()

    [notice] = notices(ws)
    assert notice.startswith(f"<@{STEVE}> The windows claim on {TAG} was withdrawn")


async def test_a_publishable_release_mentions_its_rms(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)

    assert notices(ws) == [
        f"<@{HUGO}> <@{ALICE}> {TAG} is publishable: every role is ready. RM: /publish {TAG}"
    ]


def test_a_person_without_a_slack_id_is_named_and_an_id_cannot_inject_markup() -> None:
    message = ChannelMessage(ChannelKind.NOTICE, TAG, "a <b>", None, ("hugo", "ned"))

    payload = channel_payload(message, {"hugo": "U1<!channel>"})

    assert payload["text"] == "<@U1&lt;!channel&gt;> ned a &lt;b&gt;"
