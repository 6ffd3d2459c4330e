// Finding the user's modules (src/eval/ModuleLoader.h): packages by their __init__.py, modules before namespace
// folders, the package a file belongs to, relative names.
#include "eval/ModuleLoader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace tilec::eval;
namespace fs = std::filesystem;

namespace {

struct Tree {
    fs::path root = fs::temp_directory_path() / ("tilec_modules_" + std::to_string(::getpid()));
    Tree() {
        fs::remove_all(root);
        for (const char *f : {"pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/mod.py", "pkg/util.py", "top.py",
                              "ns/inner.py", "other/top.py", "other/pkg.py"}) {
            fs::create_directories((root / f).parent_path());
            std::ofstream(root / f) << "x = 1\n";
        }
    }
    ~Tree() { fs::remove_all(root); }
    std::string at(const char *p) const { return (root / p).string(); }
};

} // namespace

TEST(ModuleLoader, FindsModulesPackagesAndSubmodules) {
    Tree t;
    std::vector<std::string> roots{t.at("other"), t.root.string()};
    auto top = findModule("top", roots);
    ASSERT_TRUE(top);
    EXPECT_EQ(top->path, t.at("other/top.py")); // the first root that has it
    auto pkg = findModule("pkg", roots);
    ASSERT_TRUE(pkg); // roots are searched in order: the module in the first beats the package in the second
    EXPECT_EQ(pkg->path, t.at("other/pkg.py"));
    auto mod = findModule("pkg.sub.mod", {t.root.string()});
    ASSERT_TRUE(mod);
    EXPECT_EQ(mod->path, t.at("pkg/sub/mod.py"));
    EXPECT_FALSE(mod->package);
    auto sub = findModule("pkg.sub", {t.root.string()});
    ASSERT_TRUE(sub && sub->package);
    EXPECT_EQ(sub->dir, t.at("pkg/sub"));
    EXPECT_FALSE(findModule("pkg.nothere", {t.root.string()}));
    EXPECT_FALSE(findModule("top.x", {t.root.string()})); // a module has no submodules
    EXPECT_FALSE(findModule("bad-name", {t.root.string()}));
    auto ns = findModule("ns", {t.root.string()}); // a folder without __init__.py: a namespace package
    ASSERT_TRUE(ns && ns->package);
    EXPECT_EQ(ns->path, "");
    EXPECT_TRUE(findSubmodule(ns->dir, "inner"));
}

TEST(ModuleLoader, PackageOfAFile) {
    Tree t;
    auto p = packageOf(t.at("pkg/sub/mod.py"));
    EXPECT_EQ(p.package, "pkg.sub");
    EXPECT_EQ(p.root, t.root.string());
    auto q = packageOf(t.at("top.py"));
    EXPECT_EQ(q.package, "");
    EXPECT_EQ(q.root, t.root.string());
    EXPECT_EQ(packageOf("kernel.py").root, ""); // the current folder, as given
}

TEST(ModuleLoader, RelativeNames) {
    std::string err;
    EXPECT_EQ(resolveRelative("a.b", 1, "c", err), "a.b.c");
    EXPECT_EQ(resolveRelative("a.b", 2, "c", err), "a.c");
    EXPECT_EQ(resolveRelative("a.b", 2, "", err), "a");
    EXPECT_FALSE(resolveRelative("a.b", 3, "c", err));
    EXPECT_EQ(err, "attempted relative import beyond top-level package");
    EXPECT_FALSE(resolveRelative("", 1, "c", err));
    EXPECT_EQ(err, "attempted relative import with no known parent package");
}

TEST(ModuleLoader, Paths) {
    EXPECT_EQ(joinPath("", "a.py"), "a.py");
    EXPECT_EQ(joinPath(".", "a.py"), "a.py");
    EXPECT_EQ(joinPath("d/", "a.py"), "d/a.py");
    EXPECT_EQ(dirName("a/b/c.py"), "a/b");
    EXPECT_EQ(dirName("c.py"), "");
    EXPECT_EQ(splitSearchPath("a::b:"), (std::vector<std::string>{"a", "b"}));
}
