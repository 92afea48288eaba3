//! Connections over `fibra::net`: plain TCP, and TLS for `https://`.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

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

/// The connector every VU uses unless told otherwise: TCP over `fibra::net`, TLS with
/// `config` (by default: the Mozilla roots) for `https://`.
pub(crate) fn connector(config: Option<Arc<ClientConfig>>) -> ConnectorFactory {
    let names = Names::default();
    let tls: Tls = Arc::new(config.map(OnceLock::from).unwrap_or_default());
    Arc::new(move || {
        let (names, tls) = (names.clone(), tls.clone());
        BoxConnect::from_fn(move |endpoint, timeout| connect(&names, &tls, endpoint, timeout))
    })
}

fn connect(names: &Names, tls: &Tls, endpoint: &Endpoint, timeout: Duration) -> io::Result<Conn> {
    let addr = resolve(names, endpoint)?;
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
    let addr = resolve(&Names::default(), &endpoint)?;
    TcpStream::connect_timeout(&addr, timeout)
}

fn resolve(names: &Names, endpoint: &Endpoint) -> io::Result<SocketAddr> {
    if let Ok(ip) = endpoint.host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, endpoint.port));
    }
    let key = (endpoint.host.clone(), endpoint.port);
    if let Some(addr) = names.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(*addr);
    }
    let lookup = key.clone();
    // A name lookup blocks in the C library: run it on the blocking pool, never on a worker.
    let addr = fibra::blocking(move || {
        std::net::ToSocketAddrs::to_socket_addrs(&(lookup.0.as_str(), lookup.1))?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the name has no address"))
    })?;
    names
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, addr);
    Ok(addr)
}
