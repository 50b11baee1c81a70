//! Two passes over the schemas make them say what the serialiser writes: every field that may
//! be null is always sent, so it is `required` (utoipa leaves every `Option` out of
//! `required`), and a serde-tagged enum (a `oneOf` of `allOf`s) becomes a `oneOf` of complete
//! objects with a `discriminator`, the shape client generators read.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::openapi::schema::{ArrayItems, Discriminator, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};

/// Properties serde leaves out when they are `None` (`skip_serializing_if`): the only fields
/// that may be missing from a body, and never null when present.
const OMITTED_WHEN_NONE: &[(&str, &str)] = &[
    ("ErrorBody", "required_scope"),
    ("ProblemDetails", "required_scope"),
    ("Health", "reason"),
];

/// Makes the schemas say what the serialiser writes (see the module's documentation).
pub(super) fn complete_schemas(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    discriminate_tagged_enums(schemas);
    for (name, schema) in schemas.iter_mut() {
        if let RefOr::T(schema) = schema {
            require_written(name, schema);
        }
    }
}

/// utoipa leaves a property out of `required` when serde may skip it (`skip_serializing_if`,
/// `default`) or when it is an `Option`. Every field is written unless skipped, and only
/// `Option`s are nullable, so a nullable property is always written: it becomes required. The
/// skipped `Option`s, listed in [`OMITTED_WHEN_NONE`], stay optional and lose their null.
fn require_written(name: &str, schema: &mut Schema) {
    match schema {
        Schema::Object(object) => {
            let mut required = Vec::with_capacity(object.properties.len());
            for (property, value) in &mut object.properties {
                if OMITTED_WHEN_NONE.contains(&(name, property.as_str())) {
                    drop_null(value);
                } else if object.required.contains(property) || is_nullable(value) {
                    required.push(property.clone());
                }
                if let RefOr::T(inner) = value {
                    require_written(name, inner);
                }
            }
            object.required = required;
        }
        Schema::Array(array) => {
            if let ArrayItems::RefOrSchema(items) = &mut array.items
                && let RefOr::T(items) = items.as_mut()
            {
                require_written(name, items);
            }
        }
        Schema::OneOf(one_of) => require_written_in(name, &mut one_of.items),
        Schema::AllOf(all_of) => require_written_in(name, &mut all_of.items),
        Schema::AnyOf(any_of) => require_written_in(name, &mut any_of.items),
        _ => {}
    }
}

fn require_written_in(name: &str, schemas: &mut [RefOr<Schema>]) {
    for schema in schemas {
        if let RefOr::T(schema) = schema {
            require_written(name, schema);
        }
    }
}

fn is_null_type(schema_type: &SchemaType) -> bool {
    match schema_type {
        SchemaType::Type(t) => *t == Type::Null,
        SchemaType::Array(types) => types.contains(&Type::Null),
        SchemaType::AnyValue => true,
    }
}

/// Whether null is an instance of the (inline) schema: a type list with `null`, or a `oneOf`
/// with a null branch. A `$ref` alone is never nullable here.
fn is_nullable(schema: &RefOr<Schema>) -> bool {
    match schema {
        RefOr::Ref(_) => false,
        RefOr::T(Schema::Object(object)) => is_null_type(&object.schema_type),
        RefOr::T(Schema::Array(array)) => is_null_type(&array.schema_type),
        RefOr::T(Schema::OneOf(one_of)) => one_of.items.iter().any(is_nullable),
        RefOr::T(Schema::AnyOf(any_of)) => any_of.items.iter().any(is_nullable),
        RefOr::T(_) => false,
    }
}

/// Takes null out of a nullable schema: the `null` of a type list, or the null branch of a
/// `oneOf` (which is replaced by its only other branch).
fn drop_null(schema: &mut RefOr<Schema>) {
    let non_null = |schema_type: &mut SchemaType| {
        if let SchemaType::Array(types) = schema_type {
            types.retain(|t| *t != Type::Null);
            if let [single] = types.as_slice() {
                *schema_type = SchemaType::Type(single.clone());
            }
        }
    };
    match schema {
        RefOr::T(Schema::Object(object)) => non_null(&mut object.schema_type),
        RefOr::T(Schema::Array(array)) => non_null(&mut array.schema_type),
        RefOr::T(Schema::OneOf(one_of)) => {
            one_of.items.retain(|item| !is_nullable(item));
            if one_of.items.len() == 1
                && let Some(single) = one_of.items.pop()
            {
                *schema = single;
            }
        }
        _ => {}
    }
}

/// A serde internally tagged enum of newtype variants (`#[serde(tag = "…")]`) comes out of
/// utoipa as a `oneOf` of `allOf [$ref Variant, {tag: one-value enum}]`, which several client
/// generators cannot read. Each variant schema gets the tag as its first, required property
/// (a variant type is the body of its variant only: it appears nowhere else in the document),
/// and the enum becomes a `oneOf` of those complete objects with a `discriminator` on the tag.
fn discriminate_tagged_enums(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    let tagged: Vec<(String, TaggedEnum)> = schemas
        .iter()
        .filter_map(|(name, schema)| Some((name.clone(), tagged_enum(schema)?)))
        .collect();
    for (name, TaggedEnum { tag, variants }) in tagged {
        let mut mapping = BTreeMap::new();
        let mut branches = Vec::new();
        for variant in variants {
            let Some(RefOr::T(Schema::Object(object))) = schemas.get_mut(&variant.schema) else {
                continue;
            };
            let mut properties = std::mem::take(&mut object.properties);
            object.properties.insert(tag.clone(), variant.tag_schema);
            object.properties.append(&mut properties);
            object.required.insert(0, tag.clone());
            let location = format!("#/components/schemas/{}", variant.schema);
            mapping.insert(variant.value, location.clone());
            branches.push(Ref::new(location));
        }
        let description = match schemas.get(&name) {
            Some(RefOr::T(Schema::OneOf(one_of))) => one_of.description.clone(),
            _ => None,
        };
        let mut discriminator = Discriminator::new(tag);
        discriminator.mapping = mapping;
        let one_of = branches
            .into_iter()
            .fold(OneOfBuilder::new(), OneOfBuilder::item)
            .description(description)
            .discriminator(Some(discriminator))
            .build();
        schemas.insert(name, RefOr::T(Schema::OneOf(one_of)));
    }
}

/// A serde internally tagged enum as utoipa writes it.
struct TaggedEnum {
    /// The tag property's name.
    tag: String,
    variants: Vec<Variant>,
}

struct Variant {
    /// The tag's value for this variant.
    value: String,
    /// The name of the variant's component schema.
    schema: String,
    /// The tag property's schema: a string enum of the one value.
    tag_schema: RefOr<Schema>,
}

/// The tagged enum a schema is, if it is one.
fn tagged_enum(schema: &RefOr<Schema>) -> Option<TaggedEnum> {
    let RefOr::T(Schema::OneOf(one_of)) = schema else {
        return None;
    };
    let mut tag_name: Option<String> = None;
    let mut variants = Vec::new();
    for item in &one_of.items {
        let RefOr::T(Schema::AllOf(all_of)) = item else {
            return None;
        };
        let [RefOr::Ref(variant), RefOr::T(Schema::Object(tag))] = all_of.items.as_slice() else {
            return None;
        };
        let [(property, tag_schema)] = tag.properties.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let RefOr::T(Schema::Object(tag_object)) = tag_schema else {
            return None;
        };
        let [Value::String(value)] = tag_object.enum_values.as_deref()? else {
            return None;
        };
        if tag_name.get_or_insert_with(|| property.clone()) != property {
            return None;
        }
        variants.push(Variant {
            value: value.clone(),
            schema: variant
                .ref_location
                .strip_prefix("#/components/schemas/")?
                .to_owned(),
            tag_schema: tag_schema.clone(),
        });
    }
    Some(TaggedEnum {
        tag: tag_name?,
        variants,
    })
}
