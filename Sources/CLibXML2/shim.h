// SPDX-License-Identifier: Apache-2.0
// libxml2 for the strict flat-XML codec (its C callbacks and scanner are the CFlatXML target).
#ifndef WXPAY_CLIBXML2_SHIM_H
#define WXPAY_CLIBXML2_SHIM_H
// libxml2's headers pull in the system ICU headers when LIBXML_ICU_ENABLED is set, and those clash
// with the ICU bundled in Foundation ("UErrorCode has different definitions"). We never use
// libxml2's ICU encoding support (input must be UTF-8), so switch it off before anything else.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

/// `LIBXML_TEST_VERSION` is a function-like macro Swift cannot call.
static inline void wxpay_xml_check_version(void) { LIBXML_TEST_VERSION }
#endif
