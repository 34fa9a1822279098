//! Parsing hostlist expressions into a [`HostList`]: the list semantics (input order,
//! duplicates kept) that SLURM's `scontrol show hostnames` and SCR's `--hosts`, `--count`
//! and `--nth` use.

use std::fmt;
use std::str::FromStr;

/// Numbers in brackets must stay below 10^19 so every host number fits a `u64`.
pub(crate) const MAX_DIGITS: usize = 19;

/// A malformed hostlist: where (1-based column), what, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub column: usize,
    pub message: String,
    pub hint: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "column {}: {} ({})",
            self.column, self.message, self.hint
        )
    }
}

impl std::error::Error for ParseError {}

/// `lo-hi/step`, printed zero-padded to `width` digits (SLURM: the width of `lo` as written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NumRange {
    pub lo: u64,
    pub hi: u64,
    pub step: u64,
    pub width: u8,
}

impl NumRange {
    pub fn count(&self) -> u64 {
        (self.hi - self.lo) / self.step + 1
    }
    pub fn nth(&self, i: u64) -> u64 {
        self.lo + i * self.step
    }
}

/// A bracket: its ranges in written order, with running totals so indexing is a binary
/// search (a bracket may hold thousands of single numbers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bracket {
    ranges: Vec<NumRange>,
    /// `ends[k]` = members in ranges `0..=k` (saturating).
    ends: Vec<u64>,
}

impl Bracket {
    fn new(ranges: Vec<NumRange>) -> Self {
        let ends = ranges
            .iter()
            .scan(0u64, |n, r| {
                *n = n.saturating_add(r.count());
                Some(*n)
            })
            .collect();
        Bracket { ranges, ends }
    }
}

impl std::ops::Deref for Bracket {
    type Target = [NumRange];
    fn deref(&self) -> &[NumRange] {
        &self.ranges
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    Ranges(Bracket),
}

impl Part {
    /// Members of a bracket (1 for text).
    pub(crate) fn count(&self) -> u64 {
        match self {
            Part::Text(_) => 1,
            Part::Ranges(b) => b.ends.last().copied().unwrap_or(0),
        }
    }

    /// The `i`-th number of a bracket part, with its width.
    pub(crate) fn nth(&self, i: u64) -> (u64, u8) {
        let Part::Ranges(b) = self else {
            unreachable!("text has no numbers")
        };
        let k = b.ends.partition_point(|&end| end <= i);
        let before = if k == 0 { 0 } else { b.ends[k - 1] };
        let r = &b.ranges[k];
        (r.nth(i - before), r.width)
    }
}

/// One comma-separated item: text and brackets, expanded as a cartesian product with the
/// leftmost bracket varying slowest (as SLURM does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    pub parts: Vec<Part>,
}

impl Term {
    pub fn count(&self) -> u64 {
        self.parts
            .iter()
            .fold(1u64, |n, p| n.saturating_mul(p.count()))
    }

    /// Writes the `i`-th host of this term into `out`.
    pub fn write_nth(&self, mut i: u64, out: &mut String) {
        let mut digits: Vec<(u64, u8)> = Vec::new();
        for p in self.parts.iter().rev() {
            if let Part::Ranges(_) = p {
                let c = p.count();
                digits.push(p.nth(i % c));
                i /= c;
            }
        }
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Ranges(_) => {
                    let (n, w) = digits.pop().expect("one number per bracket");
                    push_padded(out, n, w);
                }
            }
        }
    }
}

/// Appends `n` in decimal, zero-padded to `width` digits (hot in expansion: no formatter).
pub(crate) fn push_padded(out: &mut String, mut n: u64, width: u8) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for _ in (buf.len() - i)..width as usize {
        out.push('0');
    }
    out.push_str(std::str::from_utf8(&buf[i..]).expect("ASCII digits"));
}

/// A hostlist as written: a list of hosts in input order, duplicates kept. Parsing checks
/// everything; counting, indexing and expanding never materialise more than one host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostList {
    pub(crate) terms: Vec<Term>,
}

impl FromStr for HostList {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        Parser {
            bytes: s.as_bytes(),
            pos: 0,
        }
        .list()
    }
}

impl HostList {
    /// Parses several expressions (one per line or comma-separated, as a file holds them).
    pub fn parse_many<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<Self, ParseError> {
        let mut terms = Vec::new();
        for item in items {
            terms.extend(item.parse::<HostList>()?.terms);
        }
        Ok(HostList { terms })
    }

    /// Number of hosts, duplicates included (saturating at `u64::MAX`).
    pub fn count(&self) -> u64 {
        self.terms
            .iter()
            .fold(0u64, |n, t| n.saturating_add(t.count()))
    }

    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The host at 0-based `index` in list order.
    pub fn get(&self, mut index: u64) -> Option<String> {
        for t in &self.terms {
            let c = t.count();
            if index < c {
                let mut s = String::new();
                t.write_nth(index, &mut s);
                return Some(s);
            }
            index -= c;
        }
        None
    }

    /// SCR's `--nth`: 1 is the first host, -1 the last; 0 or out of range is `None`.
    pub fn nth(&self, n: i64) -> Option<String> {
        let count = self.count();
        match n {
            0 => None,
            n if n > 0 => self.get(n as u64 - 1),
            n => count
                .checked_sub(n.unsigned_abs())
                .and_then(|i| self.get(i)),
        }
    }

    /// Calls `f` with each host in list order, reusing one buffer (no allocation per host).
    pub fn for_each_host(&self, mut f: impl FnMut(&str)) {
        let mut name = String::new();
        for t in &self.terms {
            for i in 0..t.count() {
                name.clear();
                t.write_nth(i, &mut name);
                f(&name);
            }
        }
    }

    /// Hosts in list order.
    pub fn iter(&self) -> impl Iterator<Item = String> + '_ {
        self.terms.iter().flat_map(|t| {
            (0..t.count()).map(move |i| {
                let mut s = String::new();
                t.write_nth(i, &mut s);
                s
            })
        })
    }

    /// Whether `name` is in the list (by its set of ranges; host by host only for terms that
    /// cannot be kept as ranges).
    pub fn contains(&self, name: &str) -> bool {
        match self.to_set() {
            Ok(set) => set.contains(name),
            Err(_) => self.iter().any(|h| h == name),
        }
    }

    /// Appends another list.
    pub fn extend(&mut self, other: HostList) {
        self.terms.extend(other.terms);
    }

    /// The hosts as a set (sorted, duplicates removed). Fails only for terms that must be
    /// expanded host by host and exceed [`crate::PER_HOST_LIMIT`].
    pub fn to_set(&self) -> Result<crate::HostSet, ParseError> {
        crate::HostSet::from_list(self)
    }
}

impl fmt::Display for HostList {
    /// The compressed form of the hosts (a set: sorted, without duplicates); a list too large
    /// to fold host by host prints as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_set() {
            Ok(set) => set.fmt(f),
            Err(_) => {
                for (i, t) in self.terms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    for p in &t.parts {
                        match p {
                            Part::Text(s) => f.write_str(s)?,
                            Part::Ranges(rs) => {
                                f.write_str("[")?;
                                for (j, r) in rs.iter().enumerate() {
                                    let w = r.width as usize;
                                    if j > 0 {
                                        f.write_str(",")?;
                                    }
                                    write!(f, "{:0w$}", r.lo)?;
                                    if r.hi > r.lo {
                                        write!(f, "-{:0w$}", r.hi)?;
                                    }
                                    if r.step > 1 {
                                        write!(f, "/{}", r.step)?;
                                    }
                                }
                                f.write_str("]")?;
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

fn is_separator(b: u8) -> bool {
    b == b',' || b.is_ascii_whitespace()
}

/// A byte a host name may hold: a letter, a digit, `-`, `.` or `_` (RFC 1123 names, plus
/// the `_` some sites use). Nothing a shell, pdsh or ssh treats specially can pass.
pub(crate) fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')
}

/// Checks one host name as it enters from outside (a directory listing, the host's own
/// name, an environment variable): letters, digits, `-`, `.`, `_`, not empty, not starting
/// with `-` (a command would read it as an option). The error says what is wrong.
pub fn check_host_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a host name cannot be empty".into());
    }
    if !name.bytes().any(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("host name {name:?} has no letter or digit"));
    }
    if name.starts_with('-') {
        return Err(format!(
            "host name {name:?} starts with '-', which commands would take for an option"
        ));
    }
    match name.bytes().find(|&b| !is_host_byte(b)) {
        Some(b) => Err(format!(
            "host name {name:?} holds {:?}; host names are letters, digits, '-', '.' and '_'",
            b as char
        )),
        None => Ok(()),
    }
}

impl Parser<'_> {
    fn error(&self, at: usize, message: impl Into<String>, hint: &'static str) -> ParseError {
        ParseError {
            column: at + 1,
            message: message.into(),
            hint,
        }
    }

    fn list(mut self) -> Result<HostList, ParseError> {
        let mut terms = Vec::new();
        while self.pos < self.bytes.len() {
            if is_separator(self.bytes[self.pos]) {
                self.pos += 1;
                continue;
            }
            terms.push(self.term()?);
        }
        Ok(HostList { terms })
    }

    fn term(&mut self) -> Result<Term, ParseError> {
        let start = self.pos;
        let mut parts = Vec::new();
        let mut text = String::new();
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                _ if is_separator(b) => break,
                b'[' => {
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Ranges(Bracket::new(self.bracket()?)));
                }
                b']' => {
                    return Err(self.error(
                        self.pos,
                        "']' without a matching '['",
                        "remove it or add the '[' it closes",
                    ));
                }
                b'-' if parts.is_empty() && text.is_empty() => {
                    return Err(self.error(
                        self.pos,
                        "a host name cannot start with '-'",
                        "commands would take it for an option; remove the '-'",
                    ));
                }
                _ if is_host_byte(b) => {
                    text.push(b as char);
                    self.pos += 1;
                }
                _ => {
                    let shown = if b.is_ascii_graphic() {
                        format!("{:?}", b as char)
                    } else {
                        format!("byte {b:#04x}")
                    };
                    return Err(self.error(
                        self.pos,
                        format!("{shown} cannot be part of a host name"),
                        "host names are letters, digits, '-', '.' and '_'",
                    ));
                }
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        // every name of a term has a digit when it has a bracket; without one, its text
        // must hold a letter or digit (`.` and `..` are paths, not hosts)
        let named = parts.iter().any(|p| match p {
            Part::Ranges(_) => true,
            Part::Text(t) => t.bytes().any(|b| b.is_ascii_alphanumeric()),
        });
        if !named {
            return Err(self.error(
                start,
                "a host name needs a letter or digit",
                "'.', '-' and '_' alone do not name a host",
            ));
        }
        Ok(Term { parts })
    }

    /// Parses `[r1,r2,…]` starting at '['.
    fn bracket(&mut self) -> Result<Vec<NumRange>, ParseError> {
        let open = self.pos;
        self.pos += 1;
        let mut ranges = Vec::new();
        loop {
            let start = self.pos;
            match self.bytes.get(self.pos) {
                None => return Err(self.error(open, "'[' is never closed", "add the closing ']'")),
                Some(b']') | Some(b',') => {
                    return Err(self.error(
                        start,
                        "empty range",
                        "write a number or a range like 1-4 between the commas",
                    ));
                }
                _ => {}
            }
            ranges.push(self.range()?);
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(ranges);
                }
                None => return Err(self.error(open, "'[' is never closed", "add the closing ']'")),
                Some(b'[') => {
                    return Err(self.error(
                        self.pos,
                        "'[' inside brackets",
                        "brackets do not nest",
                    ));
                }
                Some(&b) => {
                    return Err(self.error(
                        self.pos,
                        format!("unexpected '{}' in a range", b as char),
                        "ranges look like 5, 1-4, 01-08 or 1-9/2",
                    ));
                }
            }
        }
    }

    fn number(&mut self) -> Result<(u64, u8), ParseError> {
        let start = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        let digits = &self.bytes[start..self.pos];
        if digits.is_empty() {
            let what = match self.bytes.get(self.pos) {
                None => "the end of the list".to_string(),
                Some(&b) => format!("'{}'", b as char),
            };
            return Err(self.error(
                start,
                format!("expected a number, found {what}"),
                "ranges look like 5, 1-4, 01-08 or 1-9/2",
            ));
        }
        if digits.len() > MAX_DIGITS {
            return Err(self.error(
                start,
                format!("number has {} digits", digits.len()),
                "numbers in brackets have at most 19 digits",
            ));
        }
        let text = std::str::from_utf8(digits).expect("ASCII digits");
        Ok((
            text.parse().expect("at most 19 digits fit a u64"),
            digits.len() as u8,
        ))
    }

    fn range(&mut self) -> Result<NumRange, ParseError> {
        let start = self.pos;
        let (lo, width) = self.number()?;
        let mut hi = lo;
        let mut step = 1;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
            hi = self.number()?.0;
            if hi < lo {
                let text = String::from_utf8_lossy(&self.bytes[start..self.pos]).into_owned();
                return Err(self.error(
                    start,
                    format!("range {text} goes backwards"),
                    "write the low number first",
                ));
            }
            if self.bytes.get(self.pos) == Some(&b'/') {
                self.pos += 1;
                let at = self.pos;
                step = self.number()?.0;
                if step == 0 {
                    return Err(self.error(at, "step 0", "a step is 1 or more"));
                }
            }
        }
        Ok(NumRange {
            lo,
            hi,
            step,
            width,
        })
    }
}

#[cfg(test)]
mod tests;
