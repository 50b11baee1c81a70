//! The load measurement's baseline: a minimal actix-web server answering GETs with fixed bytes,
//! with nothing else in the way (no auth, quota or cache lookup).
//!
//! `baseline ADDR [PATH=FILE]...` serves on ADDR until SIGINT/SIGTERM: GET PATH answers the
//! bytes of FILE (`cargo xtask load` passes the very bytes the measured endpoint answers, so the
//! two differ only in what happens before the body is written); any other GET answers a small
//! fixed JSON body.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::ContentType;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

const SMALL_BODY: &[u8] = br#"{"operators":[{"agent_number":"101","name":"O'tkir Karimov","team":"A","shift":"kunduzgi","staff_role":null,"joined_at":"2025-03-01 09:00:00"}]}"#;

type Bodies = Arc<HashMap<String, web::Bytes>>;

async fn fixed(req: HttpRequest, bodies: web::Data<Bodies>) -> HttpResponse {
    let body = bodies
        .get(req.path())
        .cloned()
        .unwrap_or_else(|| web::Bytes::from_static(SMALL_BODY));
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(body)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8081".to_owned());
    let mut bodies = HashMap::new();
    for arg in args {
        let (path, file) = arg.split_once('=').ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("expected PATH=FILE, got {arg:?}"),
            )
        })?;
        bodies.insert(path.to_owned(), web::Bytes::from(std::fs::read(file)?));
    }
    let bodies: Bodies = Arc::new(bodies);
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            App::new()
                .app_data(web::Data::new(Arc::clone(&bodies)))
                .default_service(web::get().to(fixed))
        })
        .bind(&address)?
        .run()
        .await
    })
}
