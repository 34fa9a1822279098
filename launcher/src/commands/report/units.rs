//! How the report writes its numbers: durations in the unit a reader takes in at a glance
//! (ms, s, min, h), sizes in binary multiples, and the time axis every chart shares (its
//! unit chosen from the span of the log).

use super::figures::Time;

/// A duration for people: `850 ms`, `12.4 s`, `3 min 20 s`, `2 h 05 min`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() {
        return "-".into();
    }
    if secs < 1.0 {
        format!("{} ms", significant(secs * 1000.0))
    } else if secs < 60.0 {
        format!("{} s", significant(secs))
    } else if secs < 3600.0 {
        let s = secs.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// A duration as an axis tick: one number and a short unit (`100 ms`, `10 s`, `2 h`).
pub fn tick(secs: f64) -> String {
    if secs < 1.0 {
        format!("{} ms", significant(secs * 1000.0))
    } else if secs < 60.0 {
        format!("{} s", significant(secs))
    } else if secs < 3600.0 {
        format!("{} min", significant(secs / 60.0))
    } else {
        format!("{} h", significant(secs / 3600.0))
    }
}

/// Bytes in binary multiples: `390.6 KiB`, `1.5 GiB`.
pub fn bytes(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{} B", v.round())
    } else {
        format!("{} {}", significant(v), units[u])
    }
}

/// At most three significant digits, without trailing zeros: 0.00123, 1.23, 12.3, 123,
/// 1234.
pub fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let digits = v.abs().log10().floor() as i32;
    let decimals = (2 - digits).clamp(0, 6) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The x axis of the charts over time: seconds since the first run started, shown in
/// seconds, minutes, hours or days by the log's span.
pub struct TimeAxis {
    pub origin: Time,
    /// Seconds per unit of the axis.
    per_unit: f64,
    pub unit: &'static str,
    /// The axis's length, in its unit.
    pub span: f64,
}

impl TimeAxis {
    pub fn new(origin: Time, end: Time) -> TimeAxis {
        let secs = (end - origin).num_milliseconds().max(0) as f64 / 1000.0;
        let (per_unit, unit) = if secs < 600.0 {
            (1.0, "s")
        } else if secs < 36_000.0 {
            (60.0, "min")
        } else if secs < 864_000.0 {
            (3600.0, "h")
        } else {
            (86_400.0, "days")
        };
        TimeAxis {
            origin,
            per_unit,
            unit,
            span: (secs / per_unit).max(1e-3),
        }
    }

    /// Where `t` is on the axis.
    pub fn x(&self, t: Time) -> f64 {
        (t - self.origin).num_milliseconds() as f64 / 1000.0 / self.per_unit
    }

    /// The range drawn: the span, with a little room on both sides for markers.
    pub fn range(&self) -> std::ops::Range<f64> {
        -0.02 * self.span..1.03 * self.span
    }

    /// The axis's description.
    pub fn description(&self) -> String {
        format!(
            "time since the first run started, {} ({})",
            self.origin.format("%Y-%m-%d %H:%M:%S %:z"),
            self.unit
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(duration(0.0123), "12.3 ms");
        assert_eq!(duration(1.5), "1.5 s");
        assert_eq!(duration(200.0), "3 min 20 s");
        assert_eq!(duration(7500.0), "2 h 05 min");
        assert_eq!(tick(0.1), "100 ms");
        assert_eq!(tick(7200.0), "2 h");
        assert_eq!(bytes(400_016.0), "391 KiB");
        assert_eq!(bytes(1536.0 * 1024.0 * 1024.0), "1.5 GiB");
        assert_eq!(significant(1234.0), "1234");
        assert_eq!(significant(0.00123), "0.00123");
    }
}
