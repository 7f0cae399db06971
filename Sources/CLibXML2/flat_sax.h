// SPDX-License-Identifier: Apache-2.0
// The SAX2 callbacks of the strict flat-XML codec (Sources/WeChatPay/XML/FlatXMLParser.swift).
//
// libxml2 with these callbacks reads every document the canonical-form scanner (flat_canonical.h)
// declines, and decides whether it is refused. They are C, not Swift closures, because they run
// about a hundred times per notify: Swift callbacks (thunks, a String per name, a dictionary
// lookup per field) cost more than libxml2's tokenizer. They only record where each field's name
// and value are: names as libxml2's interned pointers with a small integer id per distinct name
// (shared with the scanner), values appended to one byte buffer. Swift turns the records into
// `Fields` once parsing is over.
//
// Every rule of the flat subset that libxml2 does not enforce itself is enforced here, by
// stopping the parser with a `wxpay_flat_failure` code (Swift maps codes to `FlatXMLError`).
#ifndef WXPAY_CLIBXML2_FLAT_SAX_H
#define WXPAY_CLIBXML2_FLAT_SAX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
};

/// One field: the interned name, its id and where its value is in `values`.
typedef struct {
    const xmlChar *name;
    uint32_t name_id;
    uint32_t value_length;
    size_t value_offset;
} wxpay_flat_field;

typedef struct {
    xmlParserCtxtPtr context;
    /// The expected root element's name, NUL-terminated; borrowed for the length of one parse.
    const char *root;
    size_t maximum_value_length;
    /// Whether the document holds a carriage return at all (the Swift screen has looked): if not,
    /// CDATA needs no line-end normalisation and no search for one.
    int may_contain_cr;

    int depth;
    int root_seen;
    /// Set between a field's start and end tags.
    const xmlChar *current_name;
    size_t current_offset;

    wxpay_flat_field *fields;
    size_t field_count, field_capacity;
    uint8_t *values;
    size_t values_length, values_capacity;

    /// Interned name -> id, for the parser context's life (libxml2 interns names in the context's
    /// dictionary, so a pointer stands for one name until the context is freed). Ids run from 0 in
    /// order of first appearance; Swift keeps one String per id.
    const xmlChar **ids_keys;
    uint32_t *ids_values;
    size_t ids_capacity, ids_count;
    /// id -> interned name, dense: Swift fills its String table from here, also for ids handed
    /// out during documents that failed before Swift saw them.
    const xmlChar **id_names;
    /// Per id, the document that last used the name: a name whose entry equals `document` is a
    /// duplicate field. O(1) per field, for 30 honest fields and 10,000 hostile ones alike.
    uint32_t *last_document;
    size_t last_document_capacity;
    uint32_t document;
    /// The name and id of the field at each position of the previous document: WeChat sends one
    /// kind of document with the same fields in the same order, so most lookups end here.
    const xmlChar *recent_names[WXPAY_FLAT_RECENT_POSITIONS];
    uint32_t recent_ids[WXPAY_FLAT_RECENT_POSITIONS];

    wxpay_flat_failure failure;
    const xmlChar *duplicate_name;
    int error_code, error_line, error_column;
} wxpay_flat_state;

static inline size_t wxpay_flat_hash(const void *pointer, size_t capacity) {
    uint64_t x = (uint64_t)(uintptr_t)pointer;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (size_t)x & (capacity - 1);
}

/// Stops the parser. Stopping frees libxml2's input, so a callback that fails must not read its
/// text arguments afterwards.
static inline void wxpay_flat_fail(wxpay_flat_state *state, wxpay_flat_failure failure) {
    if (state->failure == WXPAY_FLAT_OK) state->failure = failure;
    xmlStopParser(state->context);
}

static inline wxpay_flat_state *wxpay_flat_state_create(xmlParserCtxtPtr context, size_t maximum_value_length) {
    wxpay_flat_state *state = calloc(1, sizeof *state);
    if (!state) return NULL;
    state->context = context;
    state->maximum_value_length = maximum_value_length;
    return state;
}

static inline void wxpay_flat_state_free(wxpay_flat_state *state) {
    if (!state) return;
    free(state->fields);
    free(state->values);
    free(state->last_document);
    free(state->ids_keys);
    free(state->ids_values);
    free(state->id_names);
    free(state);
}

/// Forgets the previous document; keeps the buffers and the name ids.
static inline void wxpay_flat_state_reset(wxpay_flat_state *state, const char *root, int may_contain_cr) {
    state->root = root;
    state->may_contain_cr = may_contain_cr;
    state->depth = 0;
    state->root_seen = 0;
    state->current_name = NULL;
    state->field_count = 0;
    state->values_length = 0;
    if (state->values_capacity > WXPAY_FLAT_KEPT_BYTES) {
        free(state->values);
        state->values = NULL;
        state->values_capacity = 0;
    }
    if (state->field_capacity * sizeof *state->fields > WXPAY_FLAT_KEPT_BYTES) {
        free(state->fields);
        state->fields = NULL;
        state->field_capacity = 0;
    }
    if (++state->document == 0) {
        // Wrapped after 4 billion documents: forget every name's last document, then start at 1.
        if (state->last_document) memset(state->last_document, 0, state->last_document_capacity * sizeof *state->last_document);
        state->document = 1;
    }
    state->failure = WXPAY_FLAT_OK;
    state->duplicate_name = NULL;
    state->error_code = state->error_line = state->error_column = 0;
}

/// The id of an interned name, assigning the next one to a name not seen before; -1 when out of memory.
static inline int64_t wxpay_flat_name_id(wxpay_flat_state *state, const xmlChar *name) {
    if ((state->ids_count + 1) * 2 > state->ids_capacity) {
        size_t capacity = state->ids_capacity ? state->ids_capacity * 2 : 128;
        const xmlChar **keys = calloc(capacity, sizeof *keys);
        uint32_t *values = calloc(capacity, sizeof *values);
        // At most half the slots hold ids, so `capacity / 2` names always fit.
        const xmlChar **names = realloc(state->id_names, capacity / 2 * sizeof *names);
        if (names) state->id_names = names;
        if (!keys || !values || !names) { free(keys); free(values); return -1; }
        for (size_t i = 0; i < state->ids_capacity; i++) {
            if (!state->ids_keys[i]) continue;
            size_t slot = wxpay_flat_hash(state->ids_keys[i], capacity);
            while (keys[slot]) slot = (slot + 1) & (capacity - 1);
            keys[slot] = state->ids_keys[i];
            values[slot] = state->ids_values[i];
        }
        free(state->ids_keys);
        free(state->ids_values);
        state->ids_keys = keys;
        state->ids_values = values;
        state->ids_capacity = capacity;
    }
    size_t slot = wxpay_flat_hash(name, state->ids_capacity);
    while (state->ids_keys[slot]) {
        if (state->ids_keys[slot] == name) return state->ids_values[slot];
        slot = (slot + 1) & (state->ids_capacity - 1);
    }
    state->ids_keys[slot] = name;
    state->ids_values[slot] = (uint32_t)state->ids_count;
    state->id_names[state->ids_count] = name;
    return (int64_t)state->ids_count++;
}

/// Whether the name with this id already named a field of this document; records it otherwise.
/// -1: out of memory.
static inline int wxpay_flat_seen_before(wxpay_flat_state *state, uint32_t id) {
    if (id >= state->last_document_capacity) {
        size_t capacity = state->last_document_capacity ? state->last_document_capacity : 128;
        while (capacity <= id) capacity *= 2;
        uint32_t *last = realloc(state->last_document, capacity * sizeof *last);
        if (!last) return -1;
        memset(last + state->last_document_capacity, 0, (capacity - state->last_document_capacity) * sizeof *last);
        state->last_document = last;
        state->last_document_capacity = capacity;
    }
    if (state->last_document[id] == state->document) return 1;
    state->last_document[id] = state->document;
    return 0;
}

static inline int wxpay_flat_reserve_values(wxpay_flat_state *state, size_t extra) {
    size_t needed = state->values_length + extra;
    if (needed <= state->values_capacity) return 1;
    size_t capacity = state->values_capacity ? state->values_capacity : 2048;
    while (capacity < needed) capacity *= 2;
    uint8_t *values = realloc(state->values, capacity);
    if (!values) return 0;
    state->values = values;
    state->values_capacity = capacity;
    return 1;
}

/// Records a field whose value runs from `value_offset` to the end of `values`; 0 when out of memory.
static inline int wxpay_flat_add_field(wxpay_flat_state *state, const xmlChar *name, uint32_t id, size_t value_offset) {
    if (state->field_count == state->field_capacity) {
        size_t capacity = state->field_capacity ? state->field_capacity * 2 : 64;
        wxpay_flat_field *fields = realloc(state->fields, capacity * sizeof *fields);
        if (!fields) return 0;
        state->fields = fields;
        state->field_capacity = capacity;
    }
    wxpay_flat_field *field = &state->fields[state->field_count++];
    field->name = name;
    field->name_id = id;
    field->value_offset = value_offset;
    field->value_length = (uint32_t)(state->values_length - value_offset);
    return 1;
}

static inline int wxpay_flat_is_space(uint8_t byte) {
    return byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D;
}

/// Text of the current field, or whitespace between elements.
static inline void wxpay_flat_append_text(wxpay_flat_state *state, const xmlChar *bytes, int length) {
    if (state->failure) return;
    if (state->depth == 2) {
        size_t so_far = state->values_length - state->current_offset;
        if (so_far + (size_t)length > state->maximum_value_length) {
            wxpay_flat_fail(state, WXPAY_FLAT_VALUE_TOO_LONG);
            return;
        }
        if (!wxpay_flat_reserve_values(state, (size_t)length)) {
            wxpay_flat_fail(state, WXPAY_FLAT_OUT_OF_MEMORY);
            return;
        }
        memcpy(state->values + state->values_length, bytes, (size_t)length);
        state->values_length += (size_t)length;
        return;
    }
    for (int i = 0; i < length; i++) {
        if (!wxpay_flat_is_space(bytes[i])) {
            wxpay_flat_fail(state, state->depth == 0 ? WXPAY_FLAT_TEXT_OUTSIDE_ROOT : WXPAY_FLAT_MIXED_CONTENT);
            return;
        }
    }
}

static inline void wxpay_flat_on_text(void *user, const xmlChar *bytes, int length) {
    wxpay_flat_state *state = user;
    if (state->failure || !bytes || length <= 0) return;
    wxpay_flat_append_text(state, bytes, length);
}

/// libxml2 hands CDATA over without the line-end normalisation XML 1.0 section 2.11 applies to the
/// rest of the document: CR LF and a lone CR become LF here, so a value reads the same whether it
/// came as text or as CDATA. (Fed the whole document in one chunk, libxml2 hands over each section
/// in one callback, so a CR LF pair is never split between two.)
static inline void wxpay_flat_on_cdata(void *user, const xmlChar *bytes, int length) {
    wxpay_flat_state *state = user;
    if (state->failure || !bytes || length <= 0) return;
    if (!state->may_contain_cr || !memchr(bytes, 0x0D, (size_t)length)) {
        wxpay_flat_append_text(state, bytes, length);
        return;
    }
    int start = 0;
    static const xmlChar newline = 0x0A;
    for (int i = start; i < length; i++) {
        if (bytes[i] != 0x0D) continue;
        if (i > start) wxpay_flat_append_text(state, bytes + start, i - start);
        wxpay_flat_append_text(state, &newline, 1);
        // A failure stopped the parser, and stopping frees the input `bytes` points into.
        if (state->failure) return;
        if (i + 1 < length && bytes[i + 1] == 0x0A) i++;
        start = i + 1;
    }
    if (start < length) wxpay_flat_append_text(state, bytes + start, length - start);
}

static inline void wxpay_flat_on_start(void *user, const xmlChar *localname, const xmlChar *prefix,
                                       const xmlChar *uri, int namespace_count, const xmlChar **namespaces,
                                       int attribute_count, int defaulted_count, const xmlChar **attributes) {
    (void)uri; (void)namespaces; (void)defaulted_count; (void)attributes;
    wxpay_flat_state *state = user;
    if (state->failure || !localname) return;
    if (prefix || namespace_count || attribute_count) {
        wxpay_flat_fail(state, WXPAY_FLAT_ATTRIBUTES);
        return;
    }
    state->depth++;
    if (state->depth == 1) {
        if (strcmp((const char *)localname, state->root) != 0) {
            wxpay_flat_fail(state, WXPAY_FLAT_UNEXPECTED_ROOT);
            return;
        }
        state->root_seen = 1;
    } else if (state->depth == 2) {
        state->current_name = localname;
        state->current_offset = state->values_length;
    } else {
        wxpay_flat_fail(state, WXPAY_FLAT_TOO_DEEP);
    }
}

static inline void wxpay_flat_on_end(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
    (void)localname; (void)prefix; (void)uri;
    wxpay_flat_state *state = user;
    if (state->failure) return;
    if (state->depth == 2 && state->current_name) {
        const xmlChar *name = state->current_name;
        state->current_name = NULL;
        size_t position = state->field_count;
        int64_t id;
        if (position < WXPAY_FLAT_RECENT_POSITIONS && state->recent_names[position] == name) {
            id = state->recent_ids[position];
        } else {
            id = wxpay_flat_name_id(state, name);
            if (id < 0) {
                wxpay_flat_fail(state, WXPAY_FLAT_OUT_OF_MEMORY);
                return;
            }
            if (position < WXPAY_FLAT_RECENT_POSITIONS) {
                state->recent_names[position] = name;
                state->recent_ids[position] = (uint32_t)id;
            }
        }
        int seen = wxpay_flat_seen_before(state, (uint32_t)id);
        if (seen) {
            state->duplicate_name = name;
            wxpay_flat_fail(state, seen < 0 ? WXPAY_FLAT_OUT_OF_MEMORY : WXPAY_FLAT_DUPLICATE_FIELD);
            return;
        }
        if (!wxpay_flat_add_field(state, name, (uint32_t)id, state->current_offset)) {
            wxpay_flat_fail(state, WXPAY_FLAT_OUT_OF_MEMORY);
            return;
        }
    }
    state->depth--;
}

static inline void wxpay_flat_on_doctype(void *user, const xmlChar *name, const xmlChar *external_id,
                                         const xmlChar *system_id) {
    (void)name; (void)external_id; (void)system_id;
    wxpay_flat_fail(user, WXPAY_FLAT_DOCTYPE);
}

static inline void wxpay_flat_on_entity_declaration(void *user, const xmlChar *name, int type,
                                                    const xmlChar *public_id, const xmlChar *system_id,
                                                    xmlChar *content) {
    (void)name; (void)type; (void)public_id; (void)system_id; (void)content;
    wxpay_flat_fail(user, WXPAY_FLAT_DOCTYPE);
}

/// Called only for references beyond the predefined five: with no DTD there are none.
static inline xmlEntityPtr wxpay_flat_on_get_entity(void *user, const xmlChar *name) {
    (void)name;
    wxpay_flat_fail(user, WXPAY_FLAT_ENTITY);
    return NULL;
}

static inline void wxpay_flat_on_reference(void *user, const xmlChar *name) {
    (void)name;
    wxpay_flat_fail(user, WXPAY_FLAT_ENTITY);
}

static inline void wxpay_flat_on_processing_instruction(void *user, const xmlChar *target, const xmlChar *data) {
    (void)target; (void)data;
    wxpay_flat_fail(user, WXPAY_FLAT_PROCESSING_INSTRUCTION);
}

static inline void wxpay_flat_on_comment(void *user, const xmlChar *text) {
    (void)text;
    wxpay_flat_fail(user, WXPAY_FLAT_COMMENT);
}

static inline void wxpay_flat_on_error(void *user, xmlErrorPtr error) {
    wxpay_flat_state *state = user;
    if (!state || !error || state->failure || error->level < XML_ERR_ERROR) return;
    state->error_code = error->code;
    state->error_line = error->line;
    state->error_column = error->int2;
    wxpay_flat_fail(state, WXPAY_FLAT_LIBXML2_ERROR);
}

/// The SAX2 handler with the callbacks above; everything else libxml2 may call is left NULL.
static inline void wxpay_flat_sax_handler(xmlSAXHandler *handler) {
    memset(handler, 0, sizeof *handler);
    handler->initialized = XML_SAX2_MAGIC;
    handler->startElementNs = wxpay_flat_on_start;
    handler->endElementNs = wxpay_flat_on_end;
    handler->characters = wxpay_flat_on_text;
    handler->ignorableWhitespace = wxpay_flat_on_text;
    handler->cdataBlock = wxpay_flat_on_cdata;
    handler->internalSubset = wxpay_flat_on_doctype;
    handler->externalSubset = wxpay_flat_on_doctype;
    handler->entityDecl = wxpay_flat_on_entity_declaration;
    handler->getEntity = wxpay_flat_on_get_entity;
    handler->getParameterEntity = wxpay_flat_on_get_entity;
    handler->reference = wxpay_flat_on_reference;
    handler->processingInstruction = wxpay_flat_on_processing_instruction;
    handler->comment = wxpay_flat_on_comment;
    handler->serror = wxpay_flat_on_error;
}

#endif
