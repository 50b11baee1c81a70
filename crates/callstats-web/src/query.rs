//! The query extractor: actix's `web::Query`, but deserialised by serde_html_form, which gives a
//! parameter's every value instead of refusing the whole query when one is repeated, so that the
//! endpoint's query (callstats-api) can name the repeated parameter ("given more than once") and
//! report it in its fixed order, after admission.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use callstats_domain::DomainError;
use callstats_domain::params::ParamError;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A typed query. The endpoints' queries take any list of strings under any name, so for them
/// this cannot fail; a type that can is answered 400.
#[derive(Debug)]
pub(crate) struct Query<T>(pub T);

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            serde_html_form::from_str(req.query_string())
                .map(Self)
                .map_err(|err| {
                    ApiError::new(DomainError::BadRequest(ParamError::Unreadable(
                        err.to_string(),
                    )))
                }),
        )
    }
}
