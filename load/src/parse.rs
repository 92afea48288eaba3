//! Parsing of the small text forms the command line takes: durations, stages and shards.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A text that could not be parsed, with what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub(crate) String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// Parses a duration such as `250ms`, `10s`, `1.5s`, `2m`, `1h` or `500us`.
///
/// A bare number is taken as seconds.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(fibra_load::parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert_eq!(fibra_load::parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(fibra_load::parse_duration("ten").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, ParseError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        ParseError(format!(
            "invalid duration `{text}`: expected a number with a unit such as 500ms, 10s, 2m"
        ))
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// One k6-style stage: ramp linearly to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the ramp takes.
    pub duration: Duration,
    /// The VU count (closed model) or rate per second (open model) reached at its end.
    pub target: f64,
}

/// A list of stages, starting from 0; parsed from `10s:100,30s:100,10s:0`.
///
/// ```
/// let stages: fibra_load::Stages = "1s:10,2s:10,1s:0".parse().unwrap();
/// assert_eq!(stages.total().as_secs(), 4);
/// assert_eq!(stages.target_at(std::time::Duration::from_millis(500)), 5.0);
/// assert_eq!(stages.target_at(std::time::Duration::from_secs(2)), 10.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

impl FromStr for Stages {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Stages, ParseError> {
        let stages = text
            .split(',')
            .map(|part| {
                let (duration, target) = part.split_once(':').ok_or_else(|| {
                    ParseError(format!("invalid stage `{part}`: expected DURATION:TARGET"))
                })?;
                let target: f64 = target
                    .trim()
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| {
                        ParseError(format!("invalid stage target `{target}` in `{part}`"))
                    })?;
                Ok(Stage {
                    duration: parse_duration(duration)?,
                    target,
                })
            })
            .collect::<Result<Vec<_>, ParseError>>()?;
        if stages.is_empty() {
            return Err(ParseError("no stages given".into()));
        }
        Ok(Stages(stages))
    }
}

impl Stages {
    /// The sum of all stage durations.
    pub fn total(&self) -> Duration {
        self.0.iter().map(|s| s.duration).sum()
    }

    /// The largest target of any stage.
    pub fn peak(&self) -> f64 {
        self.0.iter().map(|s| s.target).fold(0.0, f64::max)
    }

    /// The VUs the closed model runs to follow the stages: VU `i` (from 0) runs while the
    /// target is at least `i + 0.5`, so the peak rounded to the nearest whole.
    ///
    /// ```
    /// let stages: fibra_load::Stages = "10s:100,30s:100,10s:0".parse().unwrap();
    /// assert_eq!(stages.vus(), 100);
    /// let stages: fibra_load::Stages = "10s:2.4".parse().unwrap();
    /// assert_eq!(stages.vus(), 2);
    /// ```
    pub fn vus(&self) -> u64 {
        (self.peak() + 0.5).floor() as u64
    }

    /// The interpolated target `elapsed` after the start (the last target after the end).
    pub fn target_at(&self, elapsed: Duration) -> f64 {
        let mut from = 0.0;
        let mut at = elapsed.as_secs_f64();
        for stage in &self.0 {
            let length = stage.duration.as_secs_f64();
            if at < length {
                return from + (stage.target - from) * at / length;
            }
            at -= length;
            from = stage.target;
        }
        from
    }

    /// The first time at or after `elapsed` at which the target is at least `level`, or `None`
    /// when it never is again (a waiting VU sleeps until then instead of polling).
    pub fn reaches(&self, level: f64, elapsed: Duration) -> Option<Duration> {
        if self.target_at(elapsed) >= level {
            return Some(elapsed);
        }
        let now = elapsed.as_secs_f64();
        let (mut start, mut from) = (0.0, 0.0);
        for stage in &self.0 {
            let length = stage.duration.as_secs_f64();
            let end = start + length;
            // Only a rising segment that ends at or above `level`, and ends after now, can
            // reach it; the crossing is where the line meets `level`.
            if end > now && stage.target >= level && stage.target > from {
                let t = start + (level - from).max(0.0) / (stage.target - from) * length;
                return Some(Duration::from_secs_f64(t.max(now)));
            }
            start = end;
            from = stage.target;
        }
        None
    }

    /// The offset of start number `index` (counted from 0) when the rate follows the stages,
    /// or `None` when the stages end before it: the time at which the integral of the rate
    /// reaches `index`.
    pub fn start_offset(&self, index: u64) -> Option<Duration> {
        let mut remaining = index as f64;
        let mut offset = 0.0;
        let mut from = 0.0f64;
        for stage in &self.0 {
            let length = stage.duration.as_secs_f64();
            let area = (from + stage.target) / 2.0 * length;
            if remaining < area {
                let slope = (stage.target - from) / length;
                // Flat only where the rate is not zero: a first stage rising a hair above zero
                // has `from` 0 and a slope that is tiny but not.
                let t = if slope.abs() < 1e-12 && from > 0.0 {
                    remaining / from
                } else {
                    // Solve from*t + slope*t²/2 = remaining for t in [0, length].
                    (-from + (from * from + 2.0 * slope * remaining).max(0.0).sqrt()) / slope
                };
                return Some(Duration::from_secs_f64(offset + t.clamp(0.0, length)));
            }
            remaining -= area;
            offset += length;
            from = stage.target;
        }
        None
    }

    /// The stages with every target scaled by `factor` (used to split a rate over shards).
    pub fn scaled(&self, factor: f64) -> Stages {
        Stages(
            self.0
                .iter()
                .map(|s| Stage {
                    duration: s.duration,
                    target: s.target * factor,
                })
                .collect(),
        )
    }

    /// The stages with every VU target split for one shard, remainders to the first shards.
    pub fn for_shard(&self, shard: Shard) -> Stages {
        Stages(
            self.0
                .iter()
                .map(|s| Stage {
                    duration: s.duration,
                    target: shard.split_f64(s.target),
                })
                .collect(),
        )
    }
}

/// Shard `index` of `count` (`--shard I/N`, `I` counted from 0 like a Kubernetes
/// `JOB_COMPLETION_INDEX`).
///
/// ```
/// let shard: fibra_load::Shard = "1/3".parse().unwrap();
/// assert_eq!(shard.split(10), 3); // 4 + 3 + 3: the remainder goes to the first shards
/// assert!("3/3".parse::<fibra_load::Shard>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This shard's index, `0..count`.
    pub index: u64,
    /// The number of shards.
    pub count: u64,
}

impl FromStr for Shard {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Shard, ParseError> {
        let bad = || {
            ParseError(format!(
                "invalid shard `{text}`: expected I/N with 0 <= I < N"
            ))
        };
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = index.trim().parse().map_err(|_| bad())?;
        let count: u64 = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// This shard's part of `total`: `total / count`, plus one for the first `total % count`
    /// shards, so the parts add up to `total` exactly.
    pub fn split(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// [`Shard::split`] for a value that may be fractional (a rate): whole values split as
    /// integers, others evenly.
    pub fn split_f64(&self, total: f64) -> f64 {
        if total.fract() == 0.0 && total < u64::MAX as f64 {
            self.split(total as u64) as f64
        } else {
            total / self.count as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_reject_garbage() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        for bad in ["", "s", "10x", "1.2.3s", "-1s", "ms5"] {
            assert!(parse_duration(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn stages_interpolate_linearly() {
        let stages: Stages = "10s:100,30s:100,10s:0".parse().unwrap();
        assert_eq!(stages.total(), Duration::from_secs(50));
        assert_eq!(stages.peak(), 100.0);
        assert_eq!(stages.target_at(Duration::ZERO), 0.0);
        assert_eq!(stages.target_at(Duration::from_secs(5)), 50.0);
        assert_eq!(stages.target_at(Duration::from_secs(20)), 100.0);
        assert_eq!(stages.target_at(Duration::from_secs(45)), 50.0);
        assert_eq!(stages.target_at(Duration::from_secs(99)), 0.0);
        for bad in ["", "10s", "10s:", "x:1", "1s:-3", "1s:1,"] {
            assert!(bad.parse::<Stages>().is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn reaching_a_level_is_found_on_the_ramps() {
        let stages: Stages = "10s:100,10s:100,10s:0,10s:50".parse().unwrap();
        let secs = |s: f64| Duration::from_secs_f64(s);
        assert_eq!(stages.reaches(50.0, Duration::ZERO), Some(secs(5.0)));
        assert_eq!(
            stages.reaches(50.0, secs(7.0)),
            Some(secs(7.0)),
            "already there"
        );
        // On the way down below 50 at 25 s; the last ramp reaches 50 only at its end.
        assert_eq!(stages.reaches(50.0, secs(26.0)), Some(secs(40.0)));
        assert_eq!(stages.reaches(60.0, secs(26.0)), None);
        assert_eq!(stages.reaches(10.0, secs(31.0)), Some(secs(32.0)));
    }

    #[test]
    fn a_constant_rate_starts_every_period() {
        let stages: Stages = "2s:10".parse().unwrap();
        // Ramp 0 -> 10/s over 2 s: 10 starts in total, the k-th at sqrt(2k/5) s.
        assert_eq!(stages.start_offset(0), Some(Duration::ZERO));
        let fifth = stages.start_offset(5).unwrap().as_secs_f64();
        assert!((fifth - 2.0f64.sqrt()).abs() < 1e-9, "{fifth}");
        assert_eq!(stages.start_offset(10), None);
        let flat: Stages = "1s:4,1s:4".parse().unwrap();
        let offsets: Vec<_> = (2..=6)
            .map(|i| flat.start_offset(i).map(|d| d.as_secs_f64()))
            .collect();
        // The ramp 0 -> 4/s holds 2 starts; then one every 0.25 s until 2 s.
        assert_eq!(
            offsets,
            [Some(1.0), Some(1.25), Some(1.5), Some(1.75), None]
        );
    }

    #[test]
    fn a_first_stage_rising_a_hair_above_zero_starts_at_zero() {
        let stages: Stages = "1s:0.0000000000001".parse().unwrap();
        assert_eq!(stages.start_offset(0), Some(Duration::ZERO));
        assert_eq!(stages.start_offset(1), None);
    }

    #[test]
    fn shards_split_exactly_with_the_remainder_first() {
        let parts: Vec<u64> = (0..3)
            .map(|i| Shard { index: i, count: 3 }.split(10))
            .collect();
        assert_eq!(parts, [4, 3, 3]);
        let parts: Vec<u64> = (0..4)
            .map(|i| Shard { index: i, count: 4 }.split(2))
            .collect();
        assert_eq!(parts, [1, 1, 0, 0]);
        assert_eq!(Shard { index: 0, count: 4 }.split_f64(2.5), 0.625);
        assert_eq!("0/1".parse(), Ok(Shard { index: 0, count: 1 }));
        for bad in ["1", "1/0", "2/2", "a/b", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad} parsed");
        }
    }
}
