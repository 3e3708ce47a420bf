// Fuzz harness: readPromptFile (core/io/prompt_file.h) on the input as a prompt file, JSON or CSV (told apart by
// the first non-blank character). Seeds: corpus/prompt (the fixtures of tests/data/foreign and small variants).
#include "core/io/prompt_file.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = "prompt.txt";

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t*, size_t)
{
    icl::fuzz::readOrRefuse("readPromptFile", [&] {
        const icl::Prompt p = icl::readPromptFile(path);
        if (p.x.size() != p.y.size())
            icl::fuzz::finding("readPromptFile", "x and y disagree in length");
    });
    icl::fuzz::readOrRefuse("readPromptFile (d = 2, at most 8 points)",
                            [&] { (void)icl::readPromptFile(path, icl::PromptFileLimits{2, 8}); });
}
