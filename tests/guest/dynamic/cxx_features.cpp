// Dynamically linked C++ (libstdc++.so.6, libgcc_s.so.1): iostream, std::string, std::map,
// exceptions thrown and caught across the shared-library boundary, virtual calls, static
// constructors and destructors. `cxx_features throw` ends with an uncaught exception.
#include <algorithm>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

struct Global {
    std::string name;
    explicit Global(const char *n) : name(n) { std::cout << "constructed " << name << "\n"; }
    ~Global() { std::cout << "destroyed " << name << std::endl; }
};
static Global g_first("first global");

struct Shape {
    virtual ~Shape() = default;
    virtual double area() const = 0;
    virtual std::string name() const = 0;
};
struct Rect : Shape {
    double w, h;
    Rect(double w, double h) : w(w), h(h) {}
    double area() const override { return w * h; }
    std::string name() const override { return "rect"; }
};
struct Circle : Shape {
    double r;
    explicit Circle(double r) : r(r) {}
    double area() const override { return 3.14159265358979 * r * r; }
    std::string name() const override { return "circle"; }
};

struct MyError : std::runtime_error {
    int code;
    MyError(const std::string &m, int c) : std::runtime_error(m), code(c) {}
};

static int depth_thrower(int n) {
    if (n == 0) throw MyError("bottom reached", 42);
    std::string keep = "frame " + std::to_string(n); // destroyed while unwinding
    return depth_thrower(n - 1) + static_cast<int>(keep.size());
}

int main(int argc, char **argv) {
    std::ios::sync_with_stdio(true);
    // strings
    std::string s = "Hello, dynamic world";
    std::string up = s;
    std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
    std::cout << s << " | " << up << " | find(dynamic)=" << s.find("dynamic") << " | substr=" << s.substr(7, 7)
              << "\n";
    std::string joined;
    for (int i = 0; i < 5; i++) joined += std::to_string(i * i) + (i < 4 ? "," : "");
    std::cout << "joined=" << joined << " size=" << joined.size() << "\n";

    // map: word counts, iterated in key order
    std::map<std::string, int> counts;
    std::istringstream words("the quick brown fox jumps over the lazy dog the fox");
    for (std::string w; words >> w;) counts[w]++;
    for (const auto &kv : counts) std::cout << kv.first << ":" << kv.second << " ";
    std::cout << "\n";
    std::map<int, std::string, std::greater<int>> rev{{1, "one"}, {3, "three"}, {2, "two"}};
    for (const auto &kv : rev) std::cout << kv.first << "=" << kv.second << ";";
    std::cout << "\n";

    // vectors, algorithms, formatting
    std::vector<long> v(20);
    std::iota(v.begin(), v.end(), -7);
    std::sort(v.begin(), v.end(), [](long a, long b) { return (a * a) % 11 < (b * b) % 11 || ((a * a) % 11 == (b * b) % 11 && a < b); });
    for (long x : v) std::cout << x << ' ';
    std::cout << "\nsum=" << std::accumulate(v.begin(), v.end(), 0L) << std::fixed << std::setprecision(6)
              << " pi~" << 355.0 / 113.0 << std::scientific << " avogadro=" << 6.02214076e23 << std::defaultfloat
              << std::hex << " hex=" << 48879 << std::dec << std::setw(8) << std::setfill('*') << 42 << "\n";

    // virtual dispatch through unique_ptr
    std::vector<std::unique_ptr<Shape>> shapes;
    shapes.push_back(std::make_unique<Rect>(3, 4));
    shapes.push_back(std::make_unique<Circle>(1.5));
    for (const auto &sh : shapes) std::cout << sh->name() << " area " << sh->area() << "\n";

    // exceptions: our own type, library-thrown ones, rethrow, nested
    try {
        depth_thrower(10);
    } catch (const MyError &e) {
        std::cout << "caught MyError: " << e.what() << " code=" << e.code << "\n";
    }
    try {
        std::vector<int> small(3);
        small.at(7) = 1;
    } catch (const std::out_of_range &e) {
        std::cout << "caught out_of_range from libstdc++\n";
    }
    try {
        (void)std::stoi("not a number");
    } catch (const std::invalid_argument &e) {
        std::cout << "caught invalid_argument: " << e.what() << "\n";
    }
    try {
        try {
            counts.at("missing-key");
        } catch (const std::exception &) {
            std::cout << "rethrowing\n";
            throw;
        }
    } catch (const std::out_of_range &e) {
        std::cout << "caught rethrown out_of_range\n";
    }
    std::function<int(int)> fib = [&](int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); };
    std::cout << "fib(20)=" << fib(20) << "\n";
    std::cerr << "cxx_features: stderr works\n";

    if (argc > 1 && std::string(argv[1]) == "throw") {
        std::cout << "about to throw an uncaught exception" << std::endl;
        throw std::runtime_error("nobody catches this");
    }
    return 0;
}
