"""Which distribution writes an oracle site: a pair a library model builds is not a site of the code that runs it.

The labelled sets count a site where it is written (RULES.md's counting; dev2 LABELLING.md batch 1 call 1 and
batch 8 call 4, batch 11 call 1): a conv -> BatchNorm pair that torchvision's `vgg16_bn` or `resnet50` builds is
torchvision's, even when the user's module keeps the layers (`nn.Sequential(*list(m.children())[:-2])`, `.features`
re-parented by `add_module`, `self.stem = nn.Sequential(m.conv1, m.bn1, ...)`) and only torch's containers run
between the user's line and the layers, so the trace places the ops at the user's line. The rule, for every family
alike: a site belongs to the distribution that owns its anchor file only when one of its ops is written in that
distribution's files, where an op computed by a torch layer is written where the layer was constructed (the innermost
model line of its construction, `built.py`) and any other op where the model's code makes it (`match.written_at`).
A site none of whose ops is written there (both layers of the pair constructed in a library's files) is set apart as
*library-built*: counted per family and listed, never scored. One layer of the user's own is enough to keep it (the
user's conv before a library block's BatchNorm, a library's GELU module after the user's Linear).

Results traced before pass 14 (`worker.WRITTEN_PASS`) record no `written`: a site whose lines all lie in its
distribution's files is written there (its ops' places are among its lines), and one with lines in another
distribution's file is *undecided*, kept as before and counted; the next run traces those classes again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def library_built(records: Iterable[Mapping[str, Any]], dist: str, owner: Mapping[str, str]) -> bool | None:
    """Whether the records of one site (one per class that ran it) say it is library-built for `dist`: True when
    none of its ops is written in `dist`'s files (`owner`: file -> distribution), False when one is, None when a
    record cannot tell and none of the others shows an op written in `dist` (undecided)."""
    undecided = False
    for record in records:
        if "written" in record:
            files = set(record["written"] or ()) or {str(record["file"])}
        elif all(owner.get(f) == dist for f in (str(record["file"]), *(record.get("elsewhere") or {}))):
            return False  # an earlier pass's site all of whose lines are the distribution's: so are its ops' places
        else:
            undecided = True
            continue
        if any(owner.get(f) == dist for f in files):
            return False
    return None if undecided else True
