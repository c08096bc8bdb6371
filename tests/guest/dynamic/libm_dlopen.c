// Dynamically linked against libm.so.6; also loads libm.so.6 again at run time with
// dlopen and looks functions up with dlsym, and lists the loaded objects.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef double (*fn1)(double);
typedef double (*fn2)(double, double);

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int list_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    int *n = data;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == '\0') name = "(the program)";
    if (strstr(name, "vdso")) return 0; // qemu and the kernel differ on a vDSO; not our topic
    printf("object %d: %s, %d program headers, %s\n", (*n)++, base_name(name), info->dlpi_phnum,
           info->dlpi_tls_modid ? "has TLS" : "no TLS");
    return 0;
}

int main(void) {
    static const double xs[] = {0.0, 0.5, 1.0, 2.5, -3.75, 10.0, 1e-300, 1e300, 123456.789};
    volatile double sum = 0;
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        printf("x=%-12g sin=%.17g cos=%.17g exp=%.17g\n", x, sin(x), cos(x), exp(x));
        printf("   log1p|x|=%.17g sqrt|x|=%.17g cbrt=%.17g atan2(x,3)=%.17g\n", log1p(fabs(x)),
               sqrt(fabs(x)), cbrt(x), atan2(x, 3.0));
        printf("   pow(|x|,1.5)=%a lgamma=%.17g tanh=%.17g fma=%a\n", pow(fabs(x), 1.5),
               lgamma(x + 0.25), tanh(x), fma(x, 1.0 / 3.0, -x));
        sum += sin(x) * cos(x);
    }
    printf("sum=%.17g hypot=%.17g floor=%g ceil=%g round=%g trunc=%g\n", sum, hypot(3e200, 4e200),
           floor(-2.5), ceil(-2.5), round(-2.5), trunc(-2.5));

    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen(libm.so.6) failed: %s\n", dlerror());
        return 1;
    }
    fn1 dcos = (fn1)dlsym(h, "cos");
    fn2 dpow = (fn2)dlsym(h, "pow");
    fn1 dsqrt = (fn1)dlsym(h, "sqrt");
    if (!dcos || !dpow || !dsqrt) {
        printf("dlsym failed: %s\n", dlerror());
        return 1;
    }
    printf("dlsym(cos) is the linked cos: %s\n", dcos == cos ? "yes" : "no");
    printf("dlsym cos(1)=%.17g pow(2,0.5)=%.17g sqrt(2)=%.17g\n", dcos(1.0), dpow(2.0, 0.5), dsqrt(2.0));
    int same = 1;
    for (int i = -50; i <= 50; i++) {
        double x = i * 0.37;
        if (dcos(x) != cos(x) || dpow(1.5, x) != pow(1.5, x)) same = 0;
    }
    printf("dlsym'd functions agree with the linked ones: %s\n", same ? "yes" : "no");
    Dl_info info;
    if (dladdr((void *)dcos, &info) && info.dli_fname && info.dli_sname)
        printf("dladdr(cos): in %s, symbol %s\n", base_name(info.dli_fname), info.dli_sname);
    else
        printf("dladdr(cos) failed\n");

    dlerror();
    void *nosym = dlsym(h, "armada_no_such_symbol");
    const char *err = dlerror();
    printf("dlsym(armada_no_such_symbol) = %s, dlerror mentions it: %s\n", nosym ? "non-NULL" : "NULL",
           err && strstr(err, "armada_no_such_symbol") ? "yes" : "no");
    void *missing = dlopen("libarmada-does-not-exist.so.9", RTLD_NOW);
    err = dlerror();
    printf("dlopen(missing) = %s: %s\n", missing ? "non-NULL" : "NULL", err ? err : "(no error)");

    int n = 0;
    dl_iterate_phdr(list_object, &n);
    printf("dlclose=%d\n", dlclose(h));
    return 0;
}
