//! Eviction heuristics under the reference simulator's names, and their scores.
//!
//! A heuristic declares the runtime bookkeeping it needs (`needs_regions`,
//! `needs_eq_classes`) so the runtime maintains only that.

use crate::ratio::div_round;

/// The cost term of a score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// `c + R + Rr`: own compute plus both evicted-neighbourhood regions (e*).
    Neighbourhood,
    /// `C_eq`: own compute plus the equivalence classes of evicted neighbours.
    EqClass,
    /// `c`: own compute only.
    Local,
    /// `c + Rr`: own compute plus the reverse region (MSPS).
    Msps,
    /// `1`: no cost term.
    Unit,
}

/// How a victim is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heuristic {
    /// Smallest `cost / (size^a * staleness^b)`.
    Score { cost: Cost, size: bool, stale: bool },
    /// Least recently accessed (smallest internal access time).
    Lru,
    /// A uniformly random pool member (seeded).
    Random,
}

/// Every name accepted, with the heuristic it denotes. Aliases (e.g. `DTR` and
/// `AbESizeStale`) denote the same scoring and give identical runs.
pub const HEURISTIC_NAMES: &[(&str, Heuristic)] = {
    use Cost::*;
    use Heuristic::*;
    &[
        ("DTR", Score { cost: Neighbourhood, size: true, stale: true }),
        ("DTREqClass", Score { cost: EqClass, size: true, stale: true }),
        ("DTRLocal", Score { cost: Local, size: true, stale: true }),
        ("MSPS", Score { cost: Msps, size: true, stale: false }),
        ("LRU", Lru),
        ("LargestStorage", Score { cost: Unit, size: true, stale: false }),
        ("RandomStorage", Random),
        ("AbESizeStale", Score { cost: Neighbourhood, size: true, stale: true }),
        ("AbESize", Score { cost: Neighbourhood, size: true, stale: false }),
        ("AbEStale", Score { cost: Neighbourhood, size: false, stale: true }),
        ("AbE", Score { cost: Neighbourhood, size: false, stale: false }),
        ("AbEqSizeStale", Score { cost: EqClass, size: true, stale: true }),
        ("AbEqSize", Score { cost: EqClass, size: true, stale: false }),
        ("AbEqStale", Score { cost: EqClass, size: false, stale: true }),
        ("AbEq", Score { cost: EqClass, size: false, stale: false }),
        ("AbLocalSizeStale", Score { cost: Local, size: true, stale: true }),
        ("AbLocalSize", Score { cost: Local, size: true, stale: false }),
        ("AbLocalStale", Score { cost: Local, size: false, stale: true }),
        ("AbLocal", Score { cost: Local, size: false, stale: false }),
        ("AbSizeStale", Score { cost: Unit, size: true, stale: true }),
        ("AbSize", Score { cost: Unit, size: true, stale: false }),
        ("AbStale", Score { cost: Unit, size: false, stale: true }),
        ("AbRandom", Random),
    ]
};

/// What a cost term is made of, gathered by the runtime for one candidate:
/// its own compute, the compute of its forward and reverse
/// evicted-neighbourhood regions, and the summed values of its evicted
/// neighbours' equivalence classes. A part the term does not use may be 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostParts {
    pub own: i128,
    pub forward: i128,
    pub reverse: i128,
    pub classes: i128,
}

impl Cost {
    /// The cost term from its parts: each heuristic's cost, assembled here.
    /// (The victim scan bounds a candidate by bounding the parts: every term
    /// is a sum of parts, so it rises with each part.)
    #[inline]
    pub fn term(&self, p: CostParts) -> i128 {
        match self {
            Cost::Neighbourhood => p.own + p.forward + p.reverse,
            Cost::EqClass => p.own + p.classes,
            Cost::Local => p.own,
            Cost::Msps => p.own + p.reverse,
            Cost::Unit => 1,
        }
    }

    /// The term's name in the ablation's tables.
    pub fn label(&self) -> &'static str {
        match self {
            Cost::Neighbourhood => "e*",
            Cost::EqClass => "eq",
            Cost::Local => "local",
            Cost::Msps => "msps",
            Cost::Unit => "none",
        }
    }
}

/// A heuristic as the ablation describes it: its cost term and whether the
/// score divides by size and by staleness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    pub cost: &'static str,
    pub size: bool,
    pub staleness: bool,
    /// Chooses at random (seeded): the only heuristic a seed changes.
    pub random: bool,
}

impl Heuristic {
    pub fn from_name(name: &str) -> Option<Heuristic> {
        HEURISTIC_NAMES.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
    }

    pub fn terms(&self) -> Terms {
        match *self {
            Heuristic::Score { cost, size, stale } => {
                Terms { cost: cost.label(), size, staleness: stale, random: false }
            }
            // Orders by access time alone: staleness without a cost.
            Heuristic::Lru => Terms { cost: "lru", size: false, staleness: true, random: false },
            Heuristic::Random => Terms { cost: "random", size: false, staleness: false, random: true },
        }
    }

    pub fn needs_regions(&self) -> bool {
        matches!(self, Heuristic::Score { cost: Cost::Neighbourhood | Cost::Msps, .. })
    }

    pub fn needs_eq_classes(&self) -> bool {
        matches!(self, Heuristic::Score { cost: Cost::EqClass, .. })
    }
}

/// What a score reads about one storage.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    /// The cost term's exact value (already summed per `Cost`). Signed: the
    /// reference's equivalence-class sums can go negative (a rematerialized
    /// storage's compute is subtracted from the class its node was merged into).
    pub cost: i128,
    pub size: u64,
    /// `clock - last_access_int`; `None` when the storage was never accessed
    /// (the reference's `-inf` access time makes staleness infinite).
    pub staleness: Option<u64>,
}

/// The score of a `Heuristic::Score` variant, exactly as the reference's
/// Python arithmetic computes it (a zero or NaN denominator scores +inf).
pub fn score(size_term: bool, stale_term: bool, c: Candidate) -> f64 {
    match (size_term, stale_term) {
        // An exact integer in the reference; our sums stay far below 2^53.
        (false, false) => int_to_f64(c.cost),
        (true, false) => ratio_or_inf(c.cost, c.size as u128),
        (false, true) => match c.staleness {
            None => c.cost as f64 / f64::INFINITY, // +0.0, or -0.0 for a negative cost
            Some(st) => ratio_or_inf(c.cost, st as u128),
        },
        (true, true) => match c.staleness {
            // size * inf is inf (cost / inf = ±0), or NaN for size 0 (scores inf).
            None => {
                if c.size > 0 {
                    c.cost as f64 / f64::INFINITY
                } else {
                    f64::INFINITY
                }
            }
            Some(st) => ratio_or_inf(c.cost, c.size as u128 * st as u128),
        },
    }
}

/// `x as f64` (rounded to nearest), by the hardware where `x` fits 64 bits.
#[inline]
pub(crate) fn int_to_f64(x: i128) -> f64 {
    match i64::try_from(x) {
        Ok(x) => x as f64,
        Err(_) => wide_to_f64(x),
    }
}

/// Out of line: with both arms `x as f64` the compiler merged them into the
/// software 128-bit conversion, a fiftieth of a thrashing replay.
#[cold]
#[inline(never)]
fn wide_to_f64(x: i128) -> f64 {
    x as f64
}

/// `num / den` as Python's `int / int` (correctly rounded; rounding to
/// nearest is symmetric, so a negative quotient is the negated magnitude).
#[inline]
fn ratio_or_inf(num: i128, den: u128) -> f64 {
    if den == 0 {
        return f64::INFINITY;
    }
    let q = div_round(num.unsigned_abs(), den);
    if num < 0 {
        -q
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_name_what_the_score_divides_by() {
        let t = |n: &str| Heuristic::from_name(n).unwrap().terms();
        assert_eq!(t("DTR"), Terms { cost: "e*", size: true, staleness: true, random: false });
        assert_eq!(t("MSPS"), Terms { cost: "msps", size: true, staleness: false, random: false });
        assert_eq!(t("AbStale"), Terms { cost: "none", size: false, staleness: true, random: false });
        let random: Vec<&str> = HEURISTIC_NAMES.iter().filter(|(_, h)| h.terms().random).map(|(n, _)| *n).collect();
        assert_eq!(random, ["RandomStorage", "AbRandom"]);
    }

    #[test]
    fn each_cost_term_sums_the_parts_it_names() {
        let p = CostParts { own: 1, forward: 10, reverse: 100, classes: 1000 };
        let term = |n: &str| match Heuristic::from_name(n).unwrap() {
            Heuristic::Score { cost, .. } => cost.term(p),
            h => panic!("{h:?} has no cost term"),
        };
        assert_eq!([term("DTR"), term("MSPS"), term("DTREqClass"), term("DTRLocal"), term("AbSize")],
                   [111, 101, 1001, 1, 1]);
    }

    #[test]
    fn every_name_resolves_and_aliases_agree() {
        assert_eq!(HEURISTIC_NAMES.len(), 23);
        assert_eq!(Heuristic::from_name("DTR"), Heuristic::from_name("AbESizeStale"));
        assert_eq!(Heuristic::from_name("LargestStorage"), Heuristic::from_name("AbSize"));
        assert_eq!(Heuristic::from_name("dtr"), None);
        assert!(Heuristic::from_name("MSPS").unwrap().needs_regions());
        assert!(Heuristic::from_name("AbEq").unwrap().needs_eq_classes());
        assert!(!Heuristic::from_name("LRU").unwrap().needs_regions());
    }

    #[test]
    fn degenerate_denominators_follow_python() {
        let c = |cost, size, staleness| Candidate { cost, size, staleness };
        assert_eq!(score(true, true, c(5, 10, Some(0))), f64::INFINITY);
        assert_eq!(score(true, true, c(5, 0, Some(3))), f64::INFINITY);
        assert_eq!(score(true, true, c(5, 10, None)), 0.0);
        assert_eq!(score(true, true, c(5, 0, None)), f64::INFINITY);
        assert_eq!(score(false, true, c(5, 0, None)), 0.0);
        assert_eq!(score(true, false, c(1, 4, Some(1))), 0.25);
        assert_eq!(score(false, false, c(42, 4, Some(1))), 42.0);
        assert_eq!(score(true, true, c(1, 3, Some(1))), 1.0 / 3.0);
    }

    #[test]
    fn negative_costs_follow_python() {
        let c = |cost, size, staleness| Candidate { cost, size, staleness };
        assert_eq!(score(false, false, c(-2, 1, Some(1))), -2.0);
        assert_eq!(score(true, false, c(-1, 3, Some(1))), -(1.0 / 3.0));
        let z = score(true, true, c(-2, 3, None));
        assert!(z == 0.0 && z.is_sign_negative()); // -2 / inf == -0.0 == 0 in Python
    }
}
