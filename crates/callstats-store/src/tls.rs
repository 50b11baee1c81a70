//! TLS to Postgres, as libpq's `sslmode` has it: `disable` never, `prefer` (the default) when
//! the server offers it, `require` always, failing otherwise. As with libpq's `require`, the
//! connection is encrypted but the server's certificate is not checked against a root: that
//! keeps the traffic from being read on the network, not a server from being impersonated.

use std::sync::Arc;

use diesel::result::{ConnectionError, ConnectionResult};
use diesel_async::{AsyncConnection as _, AsyncPgConnection};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_postgres::config::SslMode;

/// A Postgres connection as the URL's `sslmode` asks for it.
pub(crate) async fn establish(url: &str) -> ConnectionResult<AsyncPgConnection> {
    let config: tokio_postgres::Config = url.parse().map_err(|error: tokio_postgres::Error| {
        ConnectionError::BadConnection(error.to_string())
    })?;
    if config.get_ssl_mode() == SslMode::Disable {
        return AsyncPgConnection::establish(url).await;
    }
    let tls = tokio_postgres_rustls::MakeRustlsConnect::new(
        client_config().map_err(|error| ConnectionError::BadConnection(error.to_string()))?,
    );
    let (client, connection) = config
        .connect(tls)
        .await
        .map_err(|error| ConnectionError::BadConnection(error.to_string()))?;
    AsyncPgConnection::try_from_client_and_connection(client, connection).await
}

fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(
        rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth(),
    )
}

/// Accepts any server certificate, but checks that the handshake is signed with it.
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
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

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
