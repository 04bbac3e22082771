//! The statistics the conformance tests compare two clients' random delays with.

/// Two-sample Kolmogorov-Smirnov: the statistic D and its asymptotic p-value (Stephens'
/// correction, as scipy's `ks_2samp(method="asymp")` and Numerical Recipes' `kstwo`).
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> (f64, f64) {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    let en = (n * m / (n + m)).sqrt();
    let lambda = (en + 0.12 + 0.11 / en) * d;
    let mut p = 0.0;
    for k in 1..=100 {
        let term = 2.0 * (-1f64).powi(k - 1) * (-2.0 * (k as f64).powi(2) * lambda * lambda).exp();
        p += term;
        if term.abs() < 1e-12 {
            break;
        }
    }
    (d, p.clamp(0.0, 1.0))
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}
