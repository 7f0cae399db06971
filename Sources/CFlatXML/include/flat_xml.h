// SPDX-License-Identifier: Apache-2.0
// The C half of the strict flat-XML codec (Sources/WeChatPay/XML/FlatXMLParser.swift): the SAX2
// callbacks libxml2 calls (flat_sax.c) and the canonical-form scanner (flat_canonical.c).
//
// They are C, not Swift closures, because they run about a hundred times per notify: Swift
// callbacks (thunks, a String per name, a dictionary lookup per field) cost more than libxml2's
// tokenizer. They only record where each field's name and value are: names as libxml2's interned
// pointers with a small integer id per distinct name (shared by both), values appended to one byte
// buffer. Swift turns the records into `Fields` once parsing is over.
//
// Every rule of the flat subset that libxml2 does not enforce itself is enforced here, by stopping
// the parser with a `wxpay_flat_failure` code (Swift maps codes to `FlatXMLError`).
#ifndef WXPAY_CFLATXML_H
#define WXPAY_CFLATXML_H
//
// This header names no libxml2 type (a parser context and a SAX handler travel as `void *`, names
// as `unsigned char`, which is libxml2's `xmlChar`): libxml2's headers are not modular, and the
// first Swift module to include them would own their declarations, hiding them from modules that
// import only CLibXML2.
#include <stddef.h>
#include <stdint.h>

typedef enum {
    WXPAY_FLAT_OK = 0,
    WXPAY_FLAT_DOCTYPE,
    WXPAY_FLAT_ENTITY,
    WXPAY_FLAT_PROCESSING_INSTRUCTION,
    WXPAY_FLAT_COMMENT,
    WXPAY_FLAT_TOO_DEEP,
    WXPAY_FLAT_VALUE_TOO_LONG,
    WXPAY_FLAT_UNEXPECTED_ROOT,
    WXPAY_FLAT_ATTRIBUTES,
    WXPAY_FLAT_MIXED_CONTENT,
    WXPAY_FLAT_TEXT_OUTSIDE_ROOT,
    WXPAY_FLAT_DUPLICATE_FIELD,
    /// libxml2 reported an error; `error_code`, `error_line` and `error_column` say which.
    WXPAY_FLAT_LIBXML2_ERROR,
    /// malloc failed; the document is refused rather than half-read.
    WXPAY_FLAT_OUT_OF_MEMORY,
} wxpay_flat_failure;

enum {
    WXPAY_FLAT_RECENT_POSITIONS = 64,
    /// Buffers grown past this by one large document are let go at the next reset, so a pooled
    /// parser does not keep a hostile document's worth of memory: WeChat's largest documents stay
    /// far below it.
    WXPAY_FLAT_KEPT_BYTES = 256 * 1024,
    /// Field names in WeChat's documents are under 32 bytes; the scanner sends longer ones to libxml2.
    WXPAY_CANONICAL_MAXIMUM_NAME = 128,
};

/// One field: the interned name, its id and where its value is in `values`.
typedef struct {
    const unsigned char *name;
    uint32_t name_id;
    uint32_t value_length;
    size_t value_offset;
} wxpay_flat_field;

typedef struct {
    /// The libxml2 push parser (`xmlParserCtxtPtr`) documents go through; its dictionary interns names.
    void *context;
    /// The expected root element's name, NUL-terminated; borrowed for the length of one parse.
    const char *root;
    size_t maximum_value_length;
    /// Whether the document holds a carriage return at all (the Swift screen has looked): if not,
    /// CDATA needs no line-end normalisation and no search for one.
    int may_contain_cr;

    int depth;
    int root_seen;
    /// Set between a field's start and end tags.
    const unsigned char *current_name;
    size_t current_offset;

    wxpay_flat_field *fields;
    size_t field_count, field_capacity;
    uint8_t *values;
    size_t values_length, values_capacity;

    /// Interned name -> id, for the parser context's life (libxml2 interns names in the context's
    /// dictionary, so a pointer stands for one name until the context is freed). Ids run from 0 in
    /// order of first appearance; Swift keeps one String per id.
    const unsigned char **ids_keys;
    uint32_t *ids_values;
    size_t ids_capacity, ids_count;
    /// id -> interned name, dense: Swift fills its String table from here, also for ids handed
    /// out during documents that failed before Swift saw them.
    const unsigned char **id_names;
    /// Per id, the document that last used the name: a name whose entry equals `document` is a
    /// duplicate field. O(1) per field, for 30 honest fields and 10,000 hostile ones alike.
    uint32_t *last_document;
    size_t last_document_capacity;
    uint32_t document;
    /// The name and id of the field at each position of the previous document: WeChat sends one
    /// kind of document with the same fields in the same order, so most lookups end here.
    const unsigned char *recent_names[WXPAY_FLAT_RECENT_POSITIONS];
    uint32_t recent_ids[WXPAY_FLAT_RECENT_POSITIONS];

    wxpay_flat_failure failure;
    const unsigned char *duplicate_name;
    int error_code, error_line, error_column;
} wxpay_flat_state;

/// A state for documents parsed with `context` (a push parser made with `wxpay_flat_sax_handler`'s
/// handler and this state as user data), or NULL when out of memory.
wxpay_flat_state *wxpay_flat_state_create(void *context, size_t maximum_value_length);

void wxpay_flat_state_free(wxpay_flat_state *state);

/// Forgets the previous document; keeps the buffers and the name ids.
void wxpay_flat_state_reset(wxpay_flat_state *state, const char *root, int may_contain_cr);

/// Fills `handler` (an `xmlSAXHandler`) with SAX2 callbacks that record into the `wxpay_flat_state`
/// given as user data; everything else libxml2 may call is left NULL.
void wxpay_flat_sax_handler(void *handler);

/// Scans a whole document, `length` bytes of already screened UTF-8 with no carriage return, in
/// `state` just reset. 1: the document is canonical and `state` holds its fields, as the SAX
/// callbacks would have recorded them. 0: declined; `state` must be reset before libxml2 parses.
///
/// WeChat Pay writes every document the same way: `<xml>`, then for each field `<name>` with its
/// value in one CDATA section or as plain text, `</name>`, then `</xml>`, with at most whitespace
/// between the fields. That shape is a regular language with no references, no declarations and
/// no nesting, so deciding it takes one pass over the bytes; libxml2's tokenizer spends 3 us on
/// it, which is 60% of the 5 us a notify may take. The scanner accepts a document only when it is
/// entirely in that shape and then records exactly the fields the libxml2 path would record;
/// anything else, hostile or merely unusual, it declines without a verdict. So a refusal always
/// comes from libxml2, and the scanner can change no verdict; the tests and the fuzz target check
/// that decoding with and without it agrees on every input.
int wxpay_flat_parse_canonical(wxpay_flat_state *state, const uint8_t *bytes, size_t length);

#endif
