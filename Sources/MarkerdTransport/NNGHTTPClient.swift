private import CNNG

/// A minimal blocking HTTP/1.1 client over nng's (`nng_http_client`): one POST per call, on a
/// fresh connection (nng closes it after the transaction). For webhooks, on a background thread.
public enum NNGHTTPClient {
    /// POSTs `body` to `url` ("http://HOST:PORT/PATH") with `headers` (Content-Length is set from
    /// the body) and returns the response's status code, whatever it is.
    /// - Throws: `NNGError` when the URL does not parse, the connection fails, or no complete
    ///   response arrives within `timeout` (`.timedOut`).
    public static func post(_ url: String, headers: [(name: String, value: String)], body: [UInt8],
                            timeout: Duration) throws(NNGError) -> UInt16 {
        var parsed: UnsafeMutablePointer<nng_url>?
        try nngCheck(nng_url_parse(&parsed, url), "nng_url_parse(\(url.prefix(64)))")
        defer { nng_url_free(parsed) }
        var client: OpaquePointer?
        try nngCheck(nng_http_client_alloc(&client, parsed), "nng_http_client_alloc")
        defer { nng_http_client_free(client) }
        var request: OpaquePointer?
        try nngCheck(nng_http_req_alloc(&request, parsed), "nng_http_req_alloc")
        defer { nng_http_req_free(request) }
        try nngCheck(nng_http_req_set_method(request, "POST"), "nng_http_req_set_method")
        for h in headers { try nngCheck(nng_http_req_set_header(request, h.name, h.value), "nng_http_req_set_header(\(h.name))") }
        try nngCheck(body.withUnsafeBytes { nng_http_req_copy_data(request, $0.baseAddress, $0.count) }, "nng_http_req_copy_data")
        var response: OpaquePointer?
        try nngCheck(nng_http_res_alloc(&response), "nng_http_res_alloc")
        defer { nng_http_res_free(response) }
        var aio: OpaquePointer?
        try nngCheck(nng_aio_alloc(&aio, nil, nil), "nng_aio_alloc")
        defer { nng_aio_free(aio) }
        nng_aio_set_timeout(aio, nngMilliseconds(timeout))
        nng_http_client_transact(client, request, response, aio)
        nng_aio_wait(aio)
        try nngCheck(nng_aio_result(aio), "POST \(url.prefix(64))")
        return nng_http_res_get_status(response)
    }
}
