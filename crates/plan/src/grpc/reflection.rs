//! gRPC server reflection (grpc.reflection.v1, as grpc-go, grpc-java, grpc-dotnet and
//! tonic serve it): the request asking for the file that defines a service, and the descriptor
//! pool built from the answer (that file and the files it imports, serialized
//! `FileDescriptorProto`s). Only the few fields used are declared.

use crate::{invalid, PlanError};
use prost::Message;
use prost_reflect::DescriptorPool;

/// The reflection service's method, v1 first, then the v1alpha older servers have.
pub const PATHS: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// `ServerReflectionRequest` with its `file_containing_symbol` (a oneof member, field 4).
#[derive(Clone, PartialEq, Message)]
struct Request {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
}

/// `ServerReflectionResponse`: the files, or an error (oneof members 4 and 7).
#[derive(Clone, PartialEq, Message)]
struct Response {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<Files>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

/// `FileDescriptorResponse`: serialized `FileDescriptorProto`s.
#[derive(Clone, PartialEq, Message)]
struct Files {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

/// `ErrorResponse`.
#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// The request message for the file defining `service`.
pub(super) fn request(service: &str) -> Vec<u8> {
    Request {
        host: String::new(),
        file_containing_symbol: Some(service.to_string()),
    }
    .encode_to_vec()
}

/// The descriptors of the reflection `answer` (its framed messages; the first is the answer
/// to our one request). Every mistake is one line naming the fix (`--proto`).
pub(super) fn pool(answer: &[u8], url: &str, method: &str) -> Result<DescriptorPool, PlanError> {
    let fail = |why: String| {
        invalid(format!(
            "{url}: the server's reflection {why}: give the service's .proto file with --proto (docs/transport.md, gRPC)"
        ))
    };
    let message = first_message(answer).ok_or_else(|| fail("sent no whole answer".into()))?;
    let response = Response::decode(message)
        .map_err(|e| fail(format!("sent an answer that is not one ({e})")))?;
    if let Some(e) = response.error_response {
        let service = super::service_of(method);
        return Err(fail(format!(
            "does not know {service} (code {}: {})",
            e.error_code, e.error_message
        )));
    }
    let files = response
        .file_descriptor_response
        .map(|f| f.file_descriptor_proto)
        .unwrap_or_default();
    if files.is_empty() {
        return Err(fail("sent no file".into()));
    }
    // A FileDescriptorSet is its files as field 1, each length-delimited.
    let mut set = Vec::new();
    for file in &files {
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut set);
        prost::encoding::encode_varint(file.len() as u64, &mut set);
        set.extend_from_slice(file);
    }
    let mut pool = DescriptorPool::new();
    pool.decode_file_descriptor_set(set.as_slice())
        .map_err(|e| fail(format!("sent files that do not make a whole set ({e})")))?;
    Ok(pool)
}

/// The first gRPC length-prefixed message of `body`, if it is all there.
fn first_message(body: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
    body.get(5..5 + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request encodes the symbol as field 4; an answer's files become a pool whose service
    /// is found, and an error answer is one line naming `--proto`.
    #[test]
    fn an_answer_of_files_becomes_a_pool_and_an_error_names_the_fix() {
        let req = request("grpc.health.v1.Health");
        let back = Request::decode(req.as_slice()).unwrap();
        assert_eq!(
            back.file_containing_symbol.as_deref(),
            Some("grpc.health.v1.Health")
        );
        let file = prost_reflect::prost_types::FileDescriptorProto {
            name: Some("t.proto".into()),
            package: Some("t".into()),
            message_type: vec![prost_reflect::prost_types::DescriptorProto {
                name: Some("M".into()),
                ..Default::default()
            }],
            service: vec![prost_reflect::prost_types::ServiceDescriptorProto {
                name: Some("S".into()),
                method: vec![prost_reflect::prost_types::MethodDescriptorProto {
                    name: Some("Do".into()),
                    input_type: Some(".t.M".into()),
                    output_type: Some(".t.M".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            syntax: Some("proto3".into()),
            ..Default::default()
        };
        let answer = Response {
            file_descriptor_response: Some(Files {
                file_descriptor_proto: vec![file.encode_to_vec()],
            }),
            error_response: None,
        };
        let body = super::super::frame(&answer.encode_to_vec());
        let got = pool(&body, "grpc://h:1", "t.S/Do").unwrap();
        assert!(got.get_service_by_name("t.S").is_some());
        let error = Response {
            file_descriptor_response: None,
            error_response: Some(ErrorResponse {
                error_code: 5,
                error_message: "not found".into(),
            }),
        };
        let body = super::super::frame(&error.encode_to_vec());
        let e = pool(&body, "grpc://h:1", "no.Such/Do")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not know no.Such (code 5: not found)"),
            "{e}"
        );
        assert!(e.contains("--proto"), "{e}");
        assert!(pool(&body[..3], "grpc://h:1", "t.S/Do").is_err());
    }
}
