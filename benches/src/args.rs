//! Command-line parsing: `<bench>... [--quick]`, where `all` stands for every bench.

use crate::registry::{self, Bench, BENCHES};

/// The usage text, printed on stderr for `--help` and after a bad argument: every bench with
/// what it measures.
pub fn usage() -> String {
    let mut text = String::from("usage: fibra-compare <bench>... [--quick]\nbenches:\n");
    for bench in BENCHES {
        text.push_str(&format!("  {:<20} {}\n", bench.name, bench.about));
    }
    text.push_str("  all                  every bench above, in this order");
    text
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage text.
    Help,
    /// Run these benches, each once, in this order.
    Run {
        /// The benches, without duplicates.
        benches: Vec<&'static Bench>,
        /// Shrink every workload.
        quick: bool,
    },
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut benches = Vec::new();
    let mut quick = false;
    for arg in args {
        let named: Vec<&'static Bench> = match arg.as_str() {
            "--quick" => {
                quick = true;
                continue;
            }
            "-h" | "--help" => return Ok(Command::Help),
            "all" => BENCHES.iter().collect(),
            name => vec![registry::find(name).ok_or_else(|| format!("unknown bench `{name}`"))?],
        };
        for bench in named {
            if !benches.contains(&bench) {
                benches.push(bench);
            }
        }
    }
    if benches.is_empty() {
        return Err("no bench named".to_string());
    }
    Ok(Command::Run { benches, quick })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(args: &[&str]) -> Result<Command, String> {
        parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn all_expands_and_duplicates_collapse() {
        let parsed = parse_str(&["skynet", "all", "--quick"]).unwrap();
        // `all` in its own order, but for the bench named before it.
        let skynet = registry::find("skynet").unwrap();
        let expected = std::iter::once(skynet)
            .chain(BENCHES.iter().filter(|&b| b != skynet))
            .collect();
        assert_eq!(
            parsed,
            Command::Run {
                benches: expected,
                quick: true
            }
        );
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse_str(&["nope"]).unwrap_err().contains("nope"));
        assert!(parse_str(&["--quick"]).is_err());
        assert_eq!(parse_str(&["--help"]).unwrap(), Command::Help);
    }

    #[test]
    fn every_bench_has_one_name_and_is_in_the_usage() {
        for (index, bench) in BENCHES.iter().enumerate() {
            assert_eq!(registry::find(bench.name).map(|b| b.name), Some(bench.name));
            assert!(
                BENCHES[..index].iter().all(|b| b.name != bench.name),
                "{}",
                bench.name
            );
            assert!(usage().contains(bench.name), "{}", bench.name);
        }
    }
}
