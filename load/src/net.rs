//! Connections over `fibra::net`: plain TCP, and TLS for `https://`.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use fibra::net::TcpStream;
use rustls::ClientConfig;

use crate::connect::{BoxConnect, Conn};
use crate::http::{Endpoint, Scheme, Transport};
use crate::run::ConnectorFactory;

impl Transport for TcpStream {
    fn set_io_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)?;
        self.set_write_timeout(timeout)
    }

    /// Lets the worker's other fibers run first: a nearby server has often answered by the
    /// time this fiber runs again, and a read that finds the response costs no readiness
    /// wait (measured: about 7% more requests per second against a loopback server).
    fn before_response(&mut self) {
        fibra::yield_now();
    }
}

/// Resolved addresses, shared by every VU of a run so a host is looked up once.
type Names = Arc<Mutex<HashMap<(String, u16), SocketAddr>>>;

/// The TLS configuration of a run: given, or the default one made when first needed.
type Tls = Arc<OnceLock<Arc<ClientConfig>>>;

/// Looks a host name up; it may block (it runs on the blocking pool).
type Lookup = Arc<dyn Fn(&str, u16) -> io::Result<SocketAddr> + Send + Sync>;

/// The connector every VU uses unless told otherwise: TCP over `fibra::net`, TLS with
/// `config` (by default: the Mozilla roots) for `https://`.
pub(crate) fn connector(config: Option<Arc<ClientConfig>>) -> ConnectorFactory {
    connector_with(config, Arc::new(system_lookup))
}

/// [`connector`], looking names up with `lookup`.
fn connector_with(config: Option<Arc<ClientConfig>>, lookup: Lookup) -> ConnectorFactory {
    let names = Names::default();
    let tls: Tls = Arc::new(config.map(OnceLock::from).unwrap_or_default());
    Arc::new(move || {
        let (names, tls, lookup) = (names.clone(), tls.clone(), lookup.clone());
        BoxConnect::from_fn(move |endpoint, timeout| {
            connect(&names, &tls, &lookup, endpoint, timeout)
        })
    })
}

/// Connects within `timeout`, the name lookup included: a resolver that hangs must not hold
/// the VU past its request's timeout.
fn connect(
    names: &Names,
    tls: &Tls,
    lookup: &Lookup,
    endpoint: &Endpoint,
    timeout: Duration,
) -> io::Result<Conn> {
    let (addr, timeout) = resolve(names, lookup, endpoint, timeout)?;
    if endpoint.scheme == Scheme::Https {
        let config = tls.get_or_init(|| {
            crate::tls::tls_config(None, crate::tls::Verify::Roots)
                .expect("the built-in roots make a valid configuration")
        });
        return Ok(Box::new(crate::tls::connect(
            config,
            &endpoint.host,
            addr,
            timeout,
        )?));
    }
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    Ok(Box::new(stream))
}

/// Opens a raw TCP connection for a VU (`Vu::connect`).
pub(crate) fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let endpoint = Endpoint {
        scheme: Scheme::Http,
        host: host.to_string(),
        port,
    };
    let lookup: Lookup = Arc::new(system_lookup);
    let (addr, timeout) = resolve(&Names::default(), &lookup, &endpoint, timeout)?;
    TcpStream::connect_timeout(&addr, timeout)
}

/// The address of `endpoint` and what is left of `timeout` to connect to it in: the lookup
/// counts against the timeout, and gives up with `TimedOut` when it runs out.
fn resolve(
    names: &Names,
    lookup: &Lookup,
    endpoint: &Endpoint,
    timeout: Duration,
) -> io::Result<(SocketAddr, Duration)> {
    let deadline = Instant::now() + timeout;
    let addr = address(names, lookup, endpoint, timeout)?;
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "name lookup took the whole timeout",
        ));
    }
    Ok((addr, left))
}

/// The address of `endpoint`: an IP address, one looked up before, or one `lookup` finds
/// within `timeout`.
fn address(
    names: &Names,
    lookup: &Lookup,
    endpoint: &Endpoint,
    timeout: Duration,
) -> io::Result<SocketAddr> {
    if let Ok(ip) = endpoint.host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, endpoint.port));
    }
    let key = (endpoint.host.clone(), endpoint.port);
    if let Some(addr) = names.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(*addr);
    }
    let (host, port, lookup) = (key.0.clone(), key.1, lookup.clone());
    // A name lookup blocks in the C library: run it on the blocking pool, never on a worker.
    // Giving up at the timeout leaves a lookup already running to finish there unheard; one
    // not yet started is dropped.
    let addr = fibra::timeout(timeout, || fibra::blocking(move || lookup(&host, port)))
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "name lookup timed out"))??;
    names
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, addr);
    Ok(addr)
}

/// The C library's resolver (`getaddrinfo`): the first address `host` has.
fn system_lookup(host: &str, port: u16) -> io::Result<SocketAddr> {
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the name has no address"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Load, Scenario};
    use std::sync::mpsc;

    #[test]
    fn a_name_lookup_that_outlasts_the_timeout_fails_the_request_as_a_timeout() {
        let (release, stalled) = mpsc::channel::<()>();
        let stalled = Mutex::new(stalled);
        let lookup: Lookup = Arc::new(move |_, _| {
            // A resolver that hangs until the test lets go; bounded, so that a run waiting for
            // it still ends and fails the assertions below rather than hanging.
            let _ = stalled
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(20));
            Err(io::Error::new(io::ErrorKind::NotFound, "lookup abandoned"))
        });
        let scenario = Scenario::new("lookup").step("get", |vu| {
            vu.get("http://stalled.invalid/")?;
            Ok(())
        });
        let load = Load::new(scenario)
            .timeout(Duration::from_millis(50))
            .iterations(1)
            .connector(connector_with(None, lookup));
        let report = fibra::run(move || {
            let report = load.run();
            // Before the runtime's end, which waits for its blocking pool.
            drop(release);
            report
        });
        assert_eq!(report.stats.requests, 1);
        assert_eq!(
            report.stats.errors.iter().collect::<Vec<_>>(),
            [(&ErrorKind::Timeout, &1)]
        );
    }
}
