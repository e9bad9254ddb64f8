"""Evidence that generalises beyond the signatures: the learned model's cause distribution and the
votes of the most similar solved reports, both read from the root error's context (the matched
lines and the log's tail, never the whole log) and the stated facts.

Both stages load lazily; when their files are missing or damaged explain still works on its
signatures, and `note` says in one line that this stage is unavailable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

from cudoctor.explainer import corpus, learned, similar, tokens
from cudoctor.explainer.ranked import RankedCause, bump
from cudoctor.explainer.scan import ScanResult

LEARNED_WEIGHT = 0.35  # the model's probability for a cause, scaled to the signatures' priors (0..1)
SIMILAR_WEIGHT = 0.5  # the similarity of the nearest reports that confirm the cause (similar.votes)
NEW_CAUSE_AT = 0.08  # a cause no signature or fact named is added only from this probability on
REASON_AT = 0.25  # a probability or vote share worth a line of evidence
SHOWN_FROM = 10  # the nearest reports the three shown are chosen from
CANDIDATE_AT = 0.01  # the least combined evidence (LEARNED_WEIGHT * p + SIMILAR_WEIGHT * vote) worth a place


@dataclasses.dataclass
class Evidence:
    distribution: dict[str, float] = dataclasses.field(default_factory=dict)
    hits: list[similar.Hit] = dataclasses.field(default_factory=list)  # best first, all of them
    note: str | None = None  # why a stage is unavailable

    def votes(self) -> dict[str, float]:
        """The causes the close enough of the nearest reports confirm (similar.votes)."""
        return similar.votes([h for h in self.hits if h.score >= similar.SHOW_AT])

    def shown(self, cause: str | None = None) -> list[similar.Hit]:
        """The similar reports worth showing: up to three that are close enough; those that confirm
        `cause` (the cause ranked first) before the others, each group by similarity."""
        close = [h for h in self.hits if h.score >= similar.SHOW_AT]
        close.sort(key=lambda h: (cause is not None and cause not in h.report.causes, -h.score))
        return close[:3]


def excerpt(scan: ScanResult) -> str:
    """The root error's context: the matched lines and the log's last lines (harmless ones left out)."""
    return tokens.excerpt([(m.line, m.text) for m in scan.matches[:200]] + scan.plain_tail())


def gather(
    scan: ScanResult,
    stated: Mapping[str, object] | None = None,
    model: learned.Model | None = None,
    index: similar.Index | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Evidence:
    """The learned distribution and the nearest solved reports for this log; the shipped model and
    corpus unless others are given (cross-validation passes held-out ones, and the threads to exclude)."""
    toks = tokens.tokens(excerpt(scan), stated)
    ev = Evidence()
    try:
        model = model or learned.load()
        ev.distribution = learned.distribution(model, toks)
    except learned.ModelError as exc:
        ev.note = f"the learned stage is unavailable ({exc})"
    try:
        index = index or similar.shipped()
        ev.hits = similar.nearest(index, toks, k=SHOWN_FROM, exclude=exclude)
    except corpus.CorpusError as exc:
        ev.note = (ev.note + "; " if ev.note else "") + f"the similar-reports stage is unavailable ({exc})"
    return ev


# How much the learned stage counts beside the root error's signature: little beside a message
# that names its cause, more beside an ambiguous one, most where no signature matched.
WEIGHT_BY_SPECIFICITY = {3: 0.25, 2: 1.0, 1: 1.5, None: 2.0}


def weight_for(specificity: int | None) -> float:
    return WEIGHT_BY_SPECIFICITY.get(specificity, 1.0)


def apply(ranked: dict[str, RankedCause], ev: Evidence, weight: float = 1.0) -> None:
    """Add the model's probabilities and the nearest reports' votes to the causes being ranked."""
    votes = ev.votes()
    for cause in set(ev.distribution) | set(votes):
        p, v = ev.distribution.get(cause, 0.0), votes.get(cause, 0.0)
        if cause not in ranked and max(p, v) < NEW_CAUSE_AT:
            continue
        amount = weight * (LEARNED_WEIGHT * p + SIMILAR_WEIGHT * v)
        reasons = []
        if p >= REASON_AT:
            reasons.append(f"learned from solved reports: {p:.0%} for this cause")
        if v >= REASON_AT:
            reasons.append(f"the closest solved reports confirm this cause (vote {v:.2f})")
        if reasons:
            bump(ranked, cause, amount, "; ".join(reasons))
        else:
            ranked.setdefault(cause, RankedCause(cause, 0.0)).score += amount


def candidates(ev: Evidence, have: Collection[str], room: int, known: Collection[str]) -> list[RankedCause]:
    """Up to `room` causes the ranking left out that the model or the nearest reports still back, best
    first, scored by that evidence alone (below the ranked ones): where a message does not name its
    cause, the second and third guesses of what was learned are worth showing."""
    if room <= 0:
        return []
    votes = ev.votes()
    combined = {
        c: LEARNED_WEIGHT * ev.distribution.get(c, 0.0) + SIMILAR_WEIGHT * votes.get(c, 0.0)
        for c in set(ev.distribution) | set(votes)
        if c not in have and c in known
    }
    out = []
    for cause, amount in sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))[:room]:
        if amount < CANDIDATE_AT:
            break
        p, v = ev.distribution.get(cause, 0.0), votes.get(cause, 0.0)
        reason = f"possible: learned from solved reports {p:.0%}" + (
            f", similar reports' vote {v:.2f}" if v else ""
        )
        out.append(RankedCause(cause, round(amount, 4), reasons=[reason]))
    return out
