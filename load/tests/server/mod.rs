//! A loopback HTTP test server on plain threads, with knobs for the behaviours under test.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[derive(Clone, Copy, Default)]
pub(crate) struct Behaviour {
    /// Answer with a chunked body.
    pub chunked: bool,
    /// Close the connection (without saying so) after this many responses on it.
    pub close_after: Option<u64>,
    /// Stall this (1-based) request for the given time before answering.
    pub stall: Option<(u64, Duration)>,
    /// Never answer: read until the client hangs up.
    pub silent: bool,
}

pub(crate) struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    pub connections: Arc<AtomicU64>,
    /// Every request head received, in order.
    pub heads: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub(crate) fn start(behaviour: Behaviour) -> Server {
        Server::start_with(behaviour, None)
    }

    /// A TLS server with a fresh self-signed certificate for 127.0.0.1; returns its PEM too.
    pub(crate) fn start_tls(behaviour: Behaviour) -> (Server, String) {
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let key =
            rustls::pki_types::PrivateKeyDer::Pkcs8(certified.key_pair.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
        let server = Server::start_with(behaviour, Some(Arc::new(config)));
        (server, certified.cert.pem())
    }

    fn start_with(behaviour: Behaviour, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let heads = Arc::new(Mutex::new(Vec::new()));
        {
            let (requests, connections, stop) =
                (requests.clone(), connections.clone(), stop.clone());
            let heads = heads.clone();
            thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let (requests, heads) = (requests.clone(), heads.clone());
                    let tls = tls.clone();
                    thread::spawn(move || {
                        conn.set_read_timeout(Some(Duration::from_secs(30)))
                            .unwrap();
                        match tls {
                            Some(config) => {
                                let session = rustls::ServerConnection::new(config).unwrap();
                                let stream = rustls::StreamOwned::new(session, conn);
                                serve(stream, behaviour, &requests, &heads);
                            }
                            None => serve(conn, behaviour, &requests, &heads),
                        }
                    });
                }
            });
        }
        Server {
            addr,
            requests,
            connections,
            heads,
            stop,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    mut conn: impl Read + Write,
    behaviour: Behaviour,
    requests: &AtomicU64,
    heads: &Mutex<Vec<String>>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut answered = 0;
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        // A request body (Content-Length only) is recorded after its head.
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map_or(0, |n| n.trim().parse().unwrap());
        while buf.len() < end + 4 + length {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned();
        buf.drain(..end + 4 + length);
        heads.lock().unwrap().push(format!("{head}\r\n\r\n{body}"));
        let number = requests.fetch_add(1, Ordering::SeqCst) + 1;
        if behaviour.silent {
            while matches!(conn.read(&mut chunk), Ok(n) if n > 0) {}
            return;
        }
        if let Some((at, stall)) = behaviour.stall {
            if number == at {
                thread::sleep(stall);
            }
        }
        let reply: &[u8] = if behaviour.chunked {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        };
        if conn.write_all(reply).and_then(|()| conn.flush()).is_err() {
            return;
        }
        answered += 1;
        if behaviour.close_after == Some(answered) {
            return;
        }
    }
}
