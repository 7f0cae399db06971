// SPDX-License-Identifier: Apache-2.0

/// The API's OpenAPI 3.1 description: docs/openapi.json, the one hand-maintained file, compiled
/// into the binary (Package.swift embeds it) and served at `GET /openapi.json`. A test checks that
/// every registered route is described in it.
public enum OpenAPIDocument {
    public static var bytes: [UInt8] { PackageResources.openapi_json }
}
