//! The baseline of the `load` and `instructions` benchmarks: a minimal actix-web server
//! answering GETs with fixed bytes, with nothing else in the way (no auth, quota or cache
//! lookup).
//!
//! `baseline ADDR [PATH=FILE[=HEADERS]]...` serves on ADDR until SIGINT/SIGTERM: GET PATH
//! answers the bytes of FILE (the benchmarks pass the very bytes the measured endpoint
//! answers, so the two differ only in what happens before the body is written), with the
//! headers of HEADERS (`name: value` lines, made once at start) instead of a JSON content type
//! when it is given; any other GET answers a small fixed JSON body.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::{ContentType, HeaderName, HeaderValue};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

const SMALL_BODY: &[u8] = br#"{"operators":[{"agent_number":"101","name":"O'tkir Karimov","team":"A","shift":"kunduzgi","staff_role":null,"joined_at":"2025-03-01 09:00:00"}]}"#;

/// What one path answers.
struct Fixed {
    body: web::Bytes,
    headers: Option<Vec<(HeaderName, HeaderValue)>>,
}

type Answers = Arc<HashMap<String, Fixed>>;

async fn fixed(req: HttpRequest, answers: web::Data<Answers>) -> HttpResponse {
    let Some(answer) = answers.get(req.path()) else {
        return HttpResponse::Ok()
            .content_type(ContentType::json())
            .body(web::Bytes::from_static(SMALL_BODY));
    };
    let mut response = HttpResponse::Ok();
    match &answer.headers {
        Some(headers) => {
            for header in headers {
                response.append_header(header.clone());
            }
        }
        None => {
            response.content_type(ContentType::json());
        }
    }
    response.body(answer.body.clone())
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, message)
}

/// The `name: value` lines of `file`.
fn headers(file: &str) -> std::io::Result<Vec<(HeaderName, HeaderValue)>> {
    let text = std::fs::read_to_string(file)?;
    text.lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (name, value) = line
                .split_once(": ")
                .ok_or_else(|| invalid(format!("expected `name: value`, got {line:?}")))?;
            let name = HeaderName::try_from(name).map_err(|err| invalid(err.to_string()))?;
            let value = HeaderValue::try_from(value).map_err(|err| invalid(err.to_string()))?;
            Ok((name, value))
        })
        .collect()
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:8081".to_owned());
    let mut answers = HashMap::new();
    for arg in args {
        let mut parts = arg.splitn(3, '=');
        let (Some(path), Some(file)) = (parts.next(), parts.next()) else {
            return Err(invalid(format!(
                "expected PATH=FILE[=HEADERS], got {arg:?}"
            )));
        };
        let fixed = Fixed {
            body: web::Bytes::from(std::fs::read(file)?),
            headers: parts.next().map(headers).transpose()?,
        };
        answers.insert(path.to_owned(), fixed);
    }
    let answers: Answers = Arc::new(answers);
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            App::new()
                .app_data(web::Data::new(Arc::clone(&answers)))
                .default_service(web::get().to(fixed))
        })
        .bind(&address)?
        .run()
        .await
    })
}
