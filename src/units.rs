//! Byte counts as SCR users write them (`1000000000`, `100GB`, `4MiB`), and timestamps in
//! the format SCR stores in the index file.

use chrono::{DateTime, Local, NaiveDateTime, TimeZone};

/// Parses a byte count: digits with an optional unit. `K`, `KB`, `KiB` (and so on up to
/// `E`) are binary multiples, as in SCR; the unit is case-insensitive; a fractional
/// number is allowed with a unit (`1.5GB`).
pub fn parse_bytecount(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        "P" | "PB" | "PIB" => 50,
        "E" | "EB" | "EIB" => 60,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in byte count {text:?} (use B, KB, MB, GB, TB, PB or EB)"
            ));
        }
    };
    if number.is_empty() {
        return Err(format!("byte count {text:?} has no number"));
    }
    if let Ok(whole) = number.parse::<u64>() {
        return whole
            .checked_mul(1u64 << shift)
            .ok_or_else(|| format!("byte count {text:?} is larger than 2^64"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{number:?} in byte count {text:?} is not a number"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("byte count {text:?} is larger than 2^64"));
    }
    Ok(bytes.round() as u64)
}

/// SCR's index timestamp format (`2011-08-08T18:31:47`, local time).
pub const TIMESTAMP_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

pub fn format_timestamp(t: DateTime<Local>) -> String {
    t.format(TIMESTAMP_FORMAT).to_string()
}

pub fn parse_timestamp(text: &str) -> Option<DateTime<Local>> {
    let naive = NaiveDateTime::parse_from_str(text, TIMESTAMP_FORMAT).ok()?;
    Local.from_local_datetime(&naive).earliest()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytecount("1000000000"), Ok(1_000_000_000));
        assert_eq!(parse_bytecount("100GB"), Ok(100 << 30));
        assert_eq!(parse_bytecount("4 MiB"), Ok(4 << 20));
        assert_eq!(parse_bytecount("2k"), Ok(2048));
        assert_eq!(parse_bytecount("1.5KB"), Ok(1536));
        assert!(parse_bytecount("").is_err());
        assert!(parse_bytecount("GB").is_err());
        assert!(
            parse_bytecount("12XB")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(
            parse_bytecount("99999999999EB")
                .unwrap_err()
                .contains("larger")
        );
        assert!(parse_bytecount("1.2.3").is_err());
    }

    #[test]
    fn timestamps_round_trip() {
        let t = parse_timestamp("2026-11-22T04:51:15").unwrap();
        assert_eq!(format_timestamp(t), "2026-11-22T04:51:15");
        assert!(parse_timestamp("yesterday").is_none());
    }
}
