"""Signing at the confirmation, the pure part: whether the bot can write a plan's signatures,
the plan entries of the signature files it wrote, and the plan they join."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.signing import BUNDLE_SUFFIX, SIDECARS


def signing_problems(plan: PublishPlan, to_sign: Sequence[str]) -> list[str]:
    """Why the bot cannot write the signatures of ``to_sign`` beside the frozen files: one of
    their sidecars is staged already (it would be published twice). Empty: it can."""
    staged = {f.path for f in plan.files}
    return [
        f"{path}{suffix} is staged without a valid {path}{BUNDLE_SUFFIX}; remove it (the bot "
        "writes all three signature files at /publish) or stage a valid bundle"
        for path in to_sign
        for suffix in SIDECARS
        if path + suffix in staged
    ]


def sidecar_files(file: PlanFile, contents: Mapping[str, bytes]) -> tuple[PlanFile, ...]:
    """The plan entries of ``file``'s signature files (``contents``: suffix → bytes), going
    where ``file`` goes, as part of its role."""
    return tuple(
        PlanFile(
            path=file.path + suffix,
            target=file.target + suffix,
            role=file.role,
            size=len(contents[suffix]),
            sha256=hashlib.sha256(contents[suffix]).hexdigest(),
        )
        for suffix in SIDECARS
    )


def with_signatures(
    plan: PublishPlan, sidecars: Sequence[PlanFile], is_index: Callable[[str], bool]
) -> PublishPlan:
    """``plan`` with the signature files the bot wrote: after the artifacts they sign and
    before the indexes and the files that replace live ones, which stay last."""
    files = list(plan.files)
    last = next(
        (i for i, f in enumerate(files) if f.is_replacement or is_index(f.path)), len(files)
    )
    return replace(plan, files=(*files[:last], *sidecars, *files[last:]))
