//! TLS configurations for both ends of a connection stormrig makes: the client side (the
//! generator, a topology layer, or the counting proxy's upstream side) and the built-in
//! target's server side. rustls with the ring provider, no OpenSSL.
//!
//! The built-in target's certificate is generated when it starts (rcgen) and handed to the
//! generator of that run as its only trust anchor: the run exercises real certificate
//! verification without a file on disk or a switch that turns checking off.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::scenario::{Protocol, Trust};

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("could not generate the built-in target's certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    #[error("no trusted certificate: the system has no root certificates and no ca_file is given")]
    NoRoots,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// ALPN names offered for `protocol` (clear-text protocols never reach here).
fn alpn(protocol: Protocol) -> Vec<Vec<u8>> {
    match protocol {
        Protocol::H2 | Protocol::H2c => vec![b"h2".to_vec()],
        Protocol::Http1 => vec![b"http/1.1".to_vec()],
    }
}

/// A server certificate made for one run of the built-in target.
pub struct SelfSigned {
    pub server: Arc<ServerConfig>,
    /// The certificate (DER), which the client side of the same run trusts.
    pub certificate: CertificateDer<'static>,
    /// The same certificate in PEM, as a `ca_file` holds it.
    pub pem: String,
}

/// A fresh key and certificate for `localhost`, `127.0.0.1` and `::1`, offering the ALPN
/// name of `protocol`.
pub fn self_signed(protocol: Protocol) -> Result<SelfSigned, TlsError> {
    let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    let ck = rcgen::generate_simple_self_signed(names)?;
    let certificate = ck.cert.der().clone();
    let pem = ck.cert.pem();
    let key = PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
    let mut server = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.clone()], key)?;
    server.alpn_protocols = alpn(protocol);
    Ok(SelfSigned {
        server: Arc::new(server),
        certificate,
        pem,
    })
}

/// The client side's configuration for `trust`; `builtin` is the built-in target's
/// certificate when `trust` is [`Trust::BuiltinSelfSigned`].
pub fn client_config(
    trust: &Trust,
    protocol: Protocol,
    builtin: Option<&CertificateDer<'static>>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let builder =
        ClientConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let mut config = match trust {
        Trust::SkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
            .with_no_client_auth(),
        Trust::BuiltinSelfSigned => {
            let mut roots = RootCertStore::empty();
            if let Some(c) = builtin {
                roots.add(c.clone())?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::Verify { extra_roots, .. } => {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            roots.add_parsable_certificates(
                extra_roots.iter().map(|d| CertificateDer::from(d.clone())),
            );
            if roots.is_empty() {
                return Err(TlsError::NoRoots);
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    config.alpn_protocols = alpn(protocol);
    Ok(Arc::new(config))
}

/// The name a certificate must carry for `host` (an IP literal or a DNS name).
pub fn server_name(host: &str) -> Option<ServerName<'static>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).ok()
}

/// True when `err`'s chain holds a rustls error: the TLS handshake, not TCP, failed.
pub fn is_handshake_failure(err: &(dyn std::error::Error + 'static)) -> bool {
    handshake_error(err).is_some()
}

/// The rustls error in `err`'s chain, in words (`invalid peer certificate: UnknownIssuer`),
/// or the whole chain's message when there is none.
pub fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    match handshake_error(err) {
        Some(e) => e.to_string(),
        None => err.to_string(),
    }
}

fn handshake_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(r) = e.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        // io::Error's `source()` skips the error it wraps: step into that one instead.
        cur = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// `insecure_skip_verify`: every certificate passes; signatures are still checked so that
/// the handshake itself is sound.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
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
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_is_trusted_only_by_its_own_run() {
        let a = self_signed(Protocol::H2).unwrap();
        let b = self_signed(Protocol::H2).unwrap();
        assert_ne!(a.certificate, b.certificate);
        assert_eq!(a.server.alpn_protocols, vec![b"h2".to_vec()]);
        let c = client_config(
            &Trust::BuiltinSelfSigned,
            Protocol::Http1,
            Some(&a.certificate),
        )
        .unwrap();
        assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(server_name("127.0.0.1").is_some());
        assert!(server_name("[::1]").is_some());
        assert!(server_name("localhost").is_some());
    }

    #[test]
    fn a_handshake_failure_is_found_however_deep_io_errors_wrap_it() {
        let rustls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let inner = std::io::Error::new(std::io::ErrorKind::InvalidData, rustls);
        let outer = std::io::Error::other(inner);
        assert!(is_handshake_failure(&outer));
        assert!(
            describe(&outer).contains("UnknownIssuer"),
            "{}",
            describe(&outer)
        );
        assert!(!is_handshake_failure(&std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused
        )));
    }
}
