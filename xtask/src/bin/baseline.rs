//! The load measurement's baseline: a minimal actix-web server answering every GET with the
//! same fixed JSON bytes, with nothing else in the way (no auth, quota or cache lookup).
//! `cargo xtask load` starts it; `baseline ADDR` serves on ADDR until SIGINT/SIGTERM.

use actix_web::http::header::ContentType;
use actix_web::{App, HttpResponse, HttpServer, web};

const BODY: &[u8] = br#"{"operators":[{"agent_number":"101","name":"O'tkir Karimov","team":"A","shift":"kunduzgi","staff_role":null,"joined_at":"2025-03-01 09:00:00"}]}"#;

async fn fixed() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(BODY)
}

fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".to_owned());
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(|| App::new().default_service(web::get().to(fixed)))
            .bind(&address)?
            .run()
            .await
    })
}
