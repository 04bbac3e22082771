//! The seeded open-loop arrival schedule.

use std::time::Duration;

use stormrig::scenario::{arrivals, expected_count, LoadShape, RateStep};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn check_bounds(times: &[Duration], duration: Duration) {
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "not non-decreasing");
    assert!(
        times.iter().all(|t| *t < duration),
        "a time at or past the duration"
    );
}

#[test]
fn constant_count_is_exact() {
    let shape = LoadShape::Constant { rate: 200.0 };
    let t: Vec<_> = arrivals(&shape, secs(10), 1).collect();
    assert_eq!(t.len(), 2000);
    assert_eq!(expected_count(&shape, secs(10)), 2000.0);
    assert_eq!(t[0], Duration::ZERO);
    assert_eq!(t[1], Duration::from_millis(5));
    assert_eq!(t[1999], Duration::from_millis(9995));
    check_bounds(&t, secs(10));
    // Seed is irrelevant to a constant schedule.
    assert!(arrivals(&shape, secs(10), 99).eq(t.iter().copied()));
}

#[test]
fn constant_fractional_rate() {
    let shape = LoadShape::Constant { rate: 0.3 };
    // Arrivals at 0, 3.33, 6.67 s within 10 s.
    assert_eq!(arrivals(&shape, secs(10), 1).count(), 3);
}

#[test]
fn ramp_count_matches_the_integral() {
    for (from, to) in [
        (10.0, 500.0),
        (500.0, 10.0),
        (0.0, 100.0),
        (100.0, 0.0),
        (50.0, 50.0),
    ] {
        let shape = LoadShape::Ramp { from, to };
        let d = secs(20);
        let t: Vec<_> = arrivals(&shape, d, 1).collect();
        let want = (from + to) / 2.0 * 20.0;
        assert_eq!(expected_count(&shape, d), want);
        assert!(
            (t.len() as f64 - want).abs() <= 1.0,
            "ramp {from}→{to}: {} arrivals, expected {want}",
            t.len()
        );
        check_bounds(&t, d);
    }
}

#[test]
fn ramp_rate_rises() {
    let shape = LoadShape::Ramp {
        from: 10.0,
        to: 190.0,
    };
    let t: Vec<_> = arrivals(&shape, secs(10), 1).collect();
    let first = t.iter().filter(|x| **x < secs(1)).count();
    let last = t.iter().filter(|x| **x >= secs(9)).count();
    // Rate at 0.5 s ≈ 19/s, at 9.5 s ≈ 181/s.
    assert!((18..=20).contains(&first), "{first}");
    assert!((180..=182).contains(&last), "{last}");
}

#[test]
fn poisson_mean_and_seeding() {
    let shape = LoadShape::Poisson { rate: 1000.0 };
    let d = secs(20);
    let a: Vec<_> = arrivals(&shape, d, 42).collect();
    let want = expected_count(&shape, d);
    assert_eq!(want, 20_000.0);
    let err = (a.len() as f64 - want).abs() / want;
    assert!(err < 0.02, "{} arrivals vs {want}", a.len());
    check_bounds(&a, d);
    let again: Vec<_> = arrivals(&shape, d, 42).collect();
    assert_eq!(a, again, "same seed, same schedule");
    let other: Vec<_> = arrivals(&shape, d, 43).take(100).collect();
    assert_ne!(a[..100], other[..], "different seed, different schedule");
}

#[test]
fn poisson_mean_over_many_seeds() {
    let shape = LoadShape::Poisson { rate: 200.0 };
    let total: usize = (0..20).map(|s| arrivals(&shape, secs(10), s).count()).sum();
    let mean = total as f64 / 20.0;
    assert!((mean - 2000.0).abs() / 2000.0 < 0.02, "{mean}");
}

#[test]
fn steps_are_honoured() {
    let shape = LoadShape::Steps {
        steps: vec![
            RateStep {
                at: secs(2),
                rate: 10.0,
            },
            RateStep {
                at: secs(5),
                rate: 0.0,
            },
            RateStep {
                at: secs(6),
                rate: 100.0,
            },
        ],
    };
    let d = secs(8);
    let t: Vec<_> = arrivals(&shape, d, 1).collect();
    check_bounds(&t, d);
    assert_eq!(
        t.iter().filter(|x| **x < secs(2)).count(),
        0,
        "nothing before the first step"
    );
    assert_eq!(
        t.iter().filter(|x| **x >= secs(2) && **x < secs(5)).count(),
        30
    );
    assert_eq!(
        t.iter().filter(|x| **x >= secs(5) && **x < secs(6)).count(),
        0
    );
    assert_eq!(t.iter().filter(|x| **x >= secs(6)).count(), 200);
    assert_eq!(t[0], secs(2));
    assert_eq!(t[30], secs(6));
    assert_eq!(expected_count(&shape, d), 230.0);
}

#[test]
fn huge_schedules_are_lazy() {
    // 100k req/s for an hour: 360 million arrivals; only the iterator exists.
    let shape = LoadShape::Poisson { rate: 100_000.0 };
    let mut it = arrivals(&shape, secs(3600), 1);
    let first: Vec<_> = it.by_ref().take(1000).collect();
    check_bounds(&first, secs(3600));
    assert!(it.next().is_some());
    assert_eq!(expected_count(&shape, secs(3600)), 360_000_000.0);
}

#[test]
fn closed_loop_has_no_schedule() {
    let shape = LoadShape::Closed {
        users: 10,
        think_time: Duration::from_millis(100),
    };
    assert_eq!(arrivals(&shape, secs(10), 1).next(), None);
}
