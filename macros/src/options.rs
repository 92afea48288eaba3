//! The attributes' options: `flavor = "current_thread"` or `"multi_thread"`, `workers = N`, and
//! for tests `timeout = "10s"`.

use syn::parse::ParseStream;
use syn::{Ident, Lit, Token};

/// The default test timeout.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// The options given to an attribute. Mistakes in them fail the build:
///
/// ```compile_fail
/// #[fibra::test(workers = 1, workers = 3)]
/// fn an_option_given_twice() {}
/// ```
///
/// ```compile_fail
/// #[fibra::test(flavor = "single_thread")]
/// fn an_unknown_flavor() {}
/// ```
///
/// ```compile_fail
/// #[fibra::test(flavor = "current_thread", workers = 2)]
/// fn workers_with_the_current_thread_flavor() {}
/// ```
pub(crate) struct Options {
    pub(crate) workers: Option<usize>,
    pub(crate) timeout_ms: u64,
}

/// The runtime an attribute asks for, as tokio's `flavor` names it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// One worker thread.
    CurrentThread,
    /// `workers = N` threads, else the runtime's default count.
    MultiThread,
}

impl Options {
    pub(crate) fn parse(input: ParseStream<'_>, is_test: bool) -> syn::Result<Options> {
        let mut flavor = Flavor::MultiThread;
        let mut options = Options {
            workers: None,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        };
        let mut given: Vec<Ident> = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value: Lit = input.parse()?;
            // Unknown keys never reach `given`: they fail below, on their first occurrence.
            if given.contains(&key) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("option `{key}` is given more than once"),
                ));
            }
            match key.to_string().as_str() {
                "flavor" => flavor = parse_flavor(&value)?,
                "workers" => options.workers = Some(workers(&value)?),
                "timeout" if is_test => options.timeout_ms = timeout_ms(&value)?,
                _ => {
                    let known = if is_test {
                        "`flavor`, `workers` and `timeout`"
                    } else {
                        "`flavor` and `workers`"
                    };
                    return Err(syn::Error::new_spanned(
                        &key,
                        format!("unknown option `{key}`: the options are {known}"),
                    ));
                }
            }
            given.push(key);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        if flavor == Flavor::CurrentThread {
            // Either order of the two options is the same mistake.
            if let Some(workers) = given.iter().find(|key| *key == "workers") {
                return Err(syn::Error::new_spanned(
                    workers,
                    "`workers` needs `flavor = \"multi_thread\"`: the \"current_thread\" flavor \
                     has one worker",
                ));
            }
            options.workers = Some(1);
        }
        Ok(options)
    }
}

fn parse_flavor(value: &Lit) -> syn::Result<Flavor> {
    let flavor = match value {
        Lit::Str(text) => match text.value().as_str() {
            "current_thread" => Some(Flavor::CurrentThread),
            "multi_thread" => Some(Flavor::MultiThread),
            _ => None,
        },
        _ => None,
    };
    flavor.ok_or_else(|| {
        syn::Error::new_spanned(
            value,
            "unknown flavor: the flavors are \"current_thread\" and \"multi_thread\"",
        )
    })
}

fn workers(value: &Lit) -> syn::Result<usize> {
    let Lit::Int(int) = value else {
        return Err(syn::Error::new_spanned(
            value,
            "`workers` takes a number, as in `workers = 4`",
        ));
    };
    match int.base10_parse::<usize>()? {
        0 => Err(syn::Error::new_spanned(
            value,
            "`workers` must be at least 1",
        )),
        workers => Ok(workers),
    }
}

fn timeout_ms(value: &Lit) -> syn::Result<u64> {
    let bad = || {
        syn::Error::new_spanned(
            value,
            "`timeout` takes a duration such as \"500ms\", \"10s\" or \"2m\"",
        )
    };
    let Lit::Str(text) = value else {
        return Err(bad());
    };
    let text = text.value();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        _ => return Err(bad()),
    };
    match number.checked_mul(scale) {
        Some(0) | None => Err(bad()),
        Some(ms) => Ok(ms),
    }
}

#[cfg(test)]
mod tests {
    use super::Options;
    use syn::parse::Parser;

    /// Parses `args` as a test's options, whose error is the message and the column it
    /// points at.
    fn parse(args: &str) -> Result<Options, (String, usize)> {
        let tokens: proc_macro2::TokenStream = args.parse().unwrap();
        (|input: syn::parse::ParseStream<'_>| Options::parse(input, true))
            .parse2(tokens)
            .map_err(|error| (error.to_string(), error.span().start().column))
    }

    /// The worker count that `args` asks for, or its error.
    fn workers(args: &str) -> Result<Option<usize>, (String, usize)> {
        parse(args).map(|options| options.workers)
    }

    #[test]
    fn a_flavor_picks_the_worker_count() {
        assert_eq!(workers(""), Ok(None));
        assert_eq!(workers("flavor = \"current_thread\""), Ok(Some(1)));
        assert_eq!(workers("flavor = \"multi_thread\""), Ok(None));
        assert_eq!(
            workers("flavor = \"multi_thread\", workers = 3"),
            Ok(Some(3))
        );
        assert_eq!(
            workers("workers = 3, flavor = \"multi_thread\""),
            Ok(Some(3))
        );
    }

    #[test]
    fn an_unknown_flavor_is_an_error_at_its_value() {
        for (args, value) in [
            ("flavor = \"single_thread\"", "\"single_thread\""),
            ("flavor = 1", "1"),
        ] {
            assert_eq!(
                workers(args),
                Err((
                    "unknown flavor: the flavors are \"current_thread\" and \"multi_thread\""
                        .to_owned(),
                    args.find(value).unwrap()
                )),
                "{args}"
            );
        }
    }

    #[test]
    fn workers_with_the_current_thread_flavor_is_an_error_at_workers() {
        for args in [
            "flavor = \"current_thread\", workers = 2",
            "workers = 2, flavor = \"current_thread\"",
        ] {
            assert_eq!(
                workers(args),
                Err((
                    "`workers` needs `flavor = \"multi_thread\"`: the \"current_thread\" \
                     flavor has one worker"
                        .to_owned(),
                    args.find("workers").unwrap()
                )),
                "{args}"
            );
        }
    }

    #[test]
    fn an_option_given_twice_is_an_error_at_its_second_occurrence() {
        let args = "workers = 1, timeout = \"5s\", workers = 3";
        let Err(error) = parse(args) else {
            panic!("a duplicate `workers` is accepted");
        };
        let second = args.rfind("workers").unwrap();
        assert_eq!(
            error,
            (
                "option `workers` is given more than once".to_owned(),
                second
            )
        );
    }
}
