//! TLS for `https://` targets: rustls over `fibra::net::TcpStream`.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fibra::net::TcpStream;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, StreamOwned};

use crate::http::{Timed, Transport};

/// How the client checks servers' certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Check the chain against the Mozilla roots (and any extra roots given).
    Roots,
    /// Accept any certificate (self-signed test servers). Handshake signatures are still
    /// checked, so the server must hold the key of the certificate it shows.
    Insecure,
}

/// A rustls client configuration for [`Load::tls`](crate::Load::tls): the Mozilla roots plus the
/// certificates in `extra_roots_pem` (PEM), or no chain check at all with [`Verify::Insecure`].
///
/// ```
/// let config = fibra_load::tls_config(None, fibra_load::Verify::Roots).unwrap();
/// assert!(config.alpn_protocols.is_empty());
/// assert!(fibra_load::tls_config(Some(b"not pem"), fibra_load::Verify::Roots).is_err());
/// ```
///
/// # Errors
///
/// When `extra_roots_pem` holds no certificate or a certificate rustls rejects.
pub fn tls_config(
    extra_roots_pem: Option<&[u8]>,
    verify: Verify,
) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let config = match verify {
        Verify::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        Verify::Roots => {
            let mut roots = RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            if let Some(pem) = extra_roots_pem {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("invalid PEM certificate: {e}"))?;
                if certs.is_empty() {
                    return Err("no certificate in the PEM data".into());
                }
                for cert in certs {
                    roots
                        .add(cert)
                        .map_err(|e| format!("unusable CA certificate: {e}"))?;
                }
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A TLS connection over a fibra TCP stream.
pub(crate) type TlsStream = StreamOwned<ClientConnection, TcpStream>;

impl Transport for TlsStream {
    fn set_io_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_io_timeout(timeout)
    }

    fn before_response(&mut self) {
        self.sock.before_response();
    }
}

/// Connects and completes the handshake (so its failures are told apart from the request's).
pub(crate) fn connect(
    config: &Arc<ClientConfig>,
    host: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<TlsStream> {
    let name = ServerName::try_from(host.to_string()).map_err(|e| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("TLS name {host}: {e}"))
    })?;
    let mut tls = ClientConnection::new(config.clone(), name).map_err(io::Error::other)?;
    let deadline = Instant::now() + timeout;
    let mut sock = TcpStream::connect_timeout(&addr, timeout)?;
    sock.set_nodelay(true)?;
    sock.set_io_timeout(Some(timeout))?;
    // The handshake as a whole within about `timeout`, not only each read: a server trickling
    // its bytes would hold the VU for ever.
    let mut timed = Timed::new(&mut sock, deadline);
    while tls.is_handshaking() {
        tls.complete_io(&mut timed).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => io::Error::other(format!("TLS handshake: {e}")),
            _ => e,
        })?;
    }
    Ok(StreamOwned::new(tls, sock))
}
