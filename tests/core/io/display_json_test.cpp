#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/io/display_json.h"

// The expected texts follow RFC 8259: C0 controls escaped by JSON itself, C1 controls (U+0080–U+009F) written
// here as \u0080 … \u009f, other non-ASCII characters raw, invalid UTF-8 as U+FFFD (EF BF BD).
TEST(DisplayJson, EscapesC1ControlsAndReplacesInvalidUtf8)
{
    const nlohmann::json v = {{"a", "x\xc2\x9b[2J\xc2\x80" "end"}, {"b", "no\xc2\xa0" "break \x1b!"}, {"c", "bad\xff"}};
    EXPECT_EQ(icl::jsonForDisplay(v),
              "{\"a\":\"x\\u009b[2J\\u0080end\",\"b\":\"no\xc2\xa0" "break \\u001b!\",\"c\":\"bad\xef\xbf\xbd\"}");
    // Valid strings come back unchanged when the text is parsed.
    const auto back = nlohmann::json::parse(icl::jsonForDisplay(v, 2));
    EXPECT_EQ(back["a"], v["a"]);
    EXPECT_EQ(back["b"], v["b"]);
    // A control at the very end, and text without any.
    EXPECT_EQ(icl::jsonForDisplay(nlohmann::json("\xc2\x9f")), "\"\\u009f\"");
    EXPECT_EQ(icl::jsonForDisplay(nlohmann::json::array({1.5, "plain"})), "[1.5,\"plain\"]");
}
