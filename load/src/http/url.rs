//! Target URLs: `http://host[:port][/path][?query]` (and `https://` for the TLS client).

use std::fmt;
use std::str::FromStr;

use crate::parse::ParseError;

/// The scheme of a [`Url`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP/1.1 over TCP.
    Http,
    /// HTTP/1.1 over TLS.
    Https,
}

/// Where a connection goes: scheme, host and port. Requests to one endpoint share a keep-alive
/// connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host name or address (IPv6 without brackets).
    pub host: String,
    /// The TCP port.
    pub port: u16,
}

impl Endpoint {
    /// The `Host` header value: the host, with the port unless it is the scheme's default.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = match self.scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// An absolute `http://` or `https://` URL.
///
/// ```
/// let url: fibra_load::Url = "http://127.0.0.1:8080/a?b=1".parse().unwrap();
/// assert_eq!(url.endpoint.port, 8080);
/// assert_eq!(url.path, "/a?b=1");
/// assert!("ftp://x".parse::<fibra_load::Url>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Scheme, host and port.
    pub endpoint: Endpoint,
    /// The path and query, starting with `/`.
    pub path: String,
}

impl FromStr for Url {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Url, ParseError> {
        let bad = |why: &str| ParseError(format!("invalid URL `{text}`: {why}"));
        let (scheme, rest) = if let Some(rest) = text.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(bad("expected http:// or https://"));
        };
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        if path.contains(|c: char| c.is_whitespace() || c.is_control()) || path.contains('#') {
            return Err(bad(
                "the path has a space, a control character or a fragment",
            ));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed `[`"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() || host.contains(['@', ' ', '/']) {
            return Err(bad("missing or invalid host"));
        }
        let port = match port {
            Some(port) => port.parse().map_err(|_| bad("invalid port"))?,
            None => match scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            },
        };
        Ok(Url {
            endpoint: Endpoint {
                scheme,
                host: host.to_string(),
                port,
            },
            path,
        })
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.endpoint.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}{}", self.endpoint.authority(), self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_endpoint_and_path() {
        let url: Url = "http://localhost".parse().unwrap();
        assert_eq!(url.endpoint.host, "localhost");
        assert_eq!(url.endpoint.port, 80);
        assert_eq!(url.path, "/");
        let url: Url = "https://[::1]:8443?x=1".parse().unwrap();
        assert_eq!(url.endpoint.scheme, Scheme::Https);
        assert_eq!(url.endpoint.host, "::1");
        assert_eq!(url.endpoint.port, 8443);
        assert_eq!(url.path, "/?x=1");
        assert_eq!(url.to_string(), "https://[::1]:8443/?x=1");
        assert_eq!(url.endpoint.authority(), "[::1]:8443");
        for bad in [
            "localhost:80",
            "http://",
            "http://:80/",
            "http://h:99999/",
            "http://h:x/",
            "http://h/a b",
            "http://u@h/",
        ] {
            assert!(bad.parse::<Url>().is_err(), "{bad} parsed");
        }
    }
}
