// SPDX-License-Identifier: Apache-2.0
// The SAX2 callbacks of the strict flat-XML codec: libxml2 with these reads every document the
// canonical-form scanner (flat_canonical.c) declines, and decides whether it is refused.
#include "flat_state.h"
#include <libxml/xmlerror.h>

/// Stops the parser. Stopping frees libxml2's input, so a callback that fails must not read its
/// text arguments afterwards.
static void wxpay_flat_fail(wxpay_flat_state *state, wxpay_flat_failure failure) {
    if (state->failure == WXPAY_FLAT_OK) state->failure = failure;
    xmlStopParser(state->context);
}

wxpay_flat_state *wxpay_flat_state_create(void *context, size_t maximum_value_length) {
    wxpay_flat_state *state = calloc(1, sizeof *state);
    if (!state) return NULL;
    state->context = context;
    state->maximum_value_length = maximum_value_length;
    return state;
}

void wxpay_flat_state_free(wxpay_flat_state *state) {
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
void wxpay_flat_state_reset(wxpay_flat_state *state, const char *root, int may_contain_cr) {
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

static int wxpay_flat_is_space(uint8_t byte) {
    return byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D;
}

/// Text of the current field, or whitespace between elements.
static void wxpay_flat_append_text(wxpay_flat_state *state, const xmlChar *bytes, int length) {
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

static void wxpay_flat_on_text(void *user, const xmlChar *bytes, int length) {
    wxpay_flat_state *state = user;
    if (state->failure || !bytes || length <= 0) return;
    wxpay_flat_append_text(state, bytes, length);
}

/// libxml2 hands CDATA over without the line-end normalisation XML 1.0 section 2.11 applies to the
/// rest of the document: CR LF and a lone CR become LF here, so a value reads the same whether it
/// came as text or as CDATA. (Fed the whole document in one chunk, libxml2 hands over each section
/// in one callback, so a CR LF pair is never split between two.)
static void wxpay_flat_on_cdata(void *user, const xmlChar *bytes, int length) {
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

static void wxpay_flat_on_start(void *user, const xmlChar *localname, const xmlChar *prefix,
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

static void wxpay_flat_on_end(void *user, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
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

static void wxpay_flat_on_doctype(void *user, const xmlChar *name, const xmlChar *external_id,
                                         const xmlChar *system_id) {
    (void)name; (void)external_id; (void)system_id;
    wxpay_flat_fail(user, WXPAY_FLAT_DOCTYPE);
}

static void wxpay_flat_on_entity_declaration(void *user, const xmlChar *name, int type,
                                                    const xmlChar *public_id, const xmlChar *system_id,
                                                    xmlChar *content) {
    (void)name; (void)type; (void)public_id; (void)system_id; (void)content;
    wxpay_flat_fail(user, WXPAY_FLAT_DOCTYPE);
}

/// Called only for references beyond the predefined five: with no DTD there are none.
static xmlEntityPtr wxpay_flat_on_get_entity(void *user, const xmlChar *name) {
    (void)name;
    wxpay_flat_fail(user, WXPAY_FLAT_ENTITY);
    return NULL;
}

static void wxpay_flat_on_reference(void *user, const xmlChar *name) {
    (void)name;
    wxpay_flat_fail(user, WXPAY_FLAT_ENTITY);
}

static void wxpay_flat_on_processing_instruction(void *user, const xmlChar *target, const xmlChar *data) {
    (void)target; (void)data;
    wxpay_flat_fail(user, WXPAY_FLAT_PROCESSING_INSTRUCTION);
}

static void wxpay_flat_on_comment(void *user, const xmlChar *text) {
    (void)text;
    wxpay_flat_fail(user, WXPAY_FLAT_COMMENT);
}

static void wxpay_flat_on_error(void *user, xmlErrorPtr error) {
    wxpay_flat_state *state = user;
    if (!state || !error || state->failure || error->level < XML_ERR_ERROR) return;
    state->error_code = error->code;
    state->error_line = error->line;
    state->error_column = error->int2;
    wxpay_flat_fail(state, WXPAY_FLAT_LIBXML2_ERROR);
}

/// The SAX2 handler with the callbacks above; everything else libxml2 may call is left NULL.
void wxpay_flat_sax_handler(void *user_handler) {
    xmlSAXHandler *handler = user_handler;
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
