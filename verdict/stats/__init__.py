"""Statistics behind Verdict's signals (numpy + scipy; not imported by ``import verdict``).

Each function validates its input and returns a frozen dataclass. Methods and references are
documented per module and in docs/statistics.md.
"""

from verdict.stats.bootstrap import BootstrapInterval, percentile_bootstrap
from verdict.stats.bradley_terry import BradleyTerryFit, fit_bradley_terry
from verdict.stats.cliffs_delta import CliffsDelta, cliffs_delta, magnitude
from verdict.stats.fisher import FisherBatch, FisherResult, fisher_exact, fisher_exact_many
from verdict.stats.interrater import (
    Coefficient,
    cohens_kappa,
    contingency_table,
    gwet_ac1,
    raw_agreement,
)
from verdict.stats.mann_whitney import MannWhitneyResult, mann_whitney_u
from verdict.stats.multiple_testing import (
    CORRECTIONS,
    BHResult,
    Correction,
    adjust,
    benjamini_hochberg,
)
from verdict.stats.power import (
    cohens_h,
    minimum_detectable_delta,
    minimum_detectable_drop,
    two_proportion_power,
)
from verdict.stats.proportions import Proportion, wilson_interval

__all__ = [
    "CORRECTIONS",
    "BHResult",
    "Correction",
    "BootstrapInterval",
    "BradleyTerryFit",
    "CliffsDelta",
    "Coefficient",
    "FisherBatch",
    "FisherResult",
    "MannWhitneyResult",
    "Proportion",
    "adjust",
    "benjamini_hochberg",
    "cliffs_delta",
    "cohens_h",
    "cohens_kappa",
    "contingency_table",
    "fisher_exact",
    "fisher_exact_many",
    "fit_bradley_terry",
    "gwet_ac1",
    "magnitude",
    "mann_whitney_u",
    "minimum_detectable_delta",
    "minimum_detectable_drop",
    "percentile_bootstrap",
    "raw_agreement",
    "two_proportion_power",
    "wilson_interval",
]
