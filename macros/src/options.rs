//! The attributes' options: `workers = N`, and for tests `timeout = "10s"`.

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
pub(crate) struct Options {
    pub(crate) workers: Option<usize>,
    pub(crate) timeout_ms: u64,
}

impl Options {
    pub(crate) fn parse(input: ParseStream<'_>, is_test: bool) -> syn::Result<Options> {
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
                "workers" => options.workers = Some(workers(&value)?),
                "timeout" if is_test => options.timeout_ms = timeout_ms(&value)?,
                _ => {
                    let known = if is_test {
                        "`workers` and `timeout`"
                    } else {
                        "`workers`"
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
        Ok(options)
    }
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
